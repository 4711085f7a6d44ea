package framework

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Background runs one long call per object (by UID) outside the reconcile
// workers, so that a flow step, which must not block, can start it and
// poll it on later passes. A run lives in the manager's memory: after a
// restart Poll reports RunNone and the step starts the call again, so the
// call must be safe to repeat (or the step must check its effect first).
type Background struct {
	mu   sync.Mutex
	runs map[types.UID]*backgroundRun
}

type backgroundRun struct {
	done bool
	err  error
}

// RunState is what Background.Poll found of an object's run.
type RunState int

// Run states.
const (
	// RunNone: no run was started, or its outcome was already taken.
	RunNone RunState = iota
	// RunRunning: the call has not returned.
	RunRunning
	// RunFinished: the call returned; Poll returns its error and forgets
	// the run.
	RunFinished
)

// NewBackground returns an empty Background.
func NewBackground() *Background { return &Background{runs: map[types.UID]*backgroundRun{}} }

// Start runs f for the object uid in a goroutine, with a context that ends
// after timeout, replacing any run of uid whose outcome was not taken.
func (b *Background) Start(uid types.UID, timeout time.Duration, f func(context.Context) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &backgroundRun{}
	b.runs[uid] = r
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := f(ctx)
		b.mu.Lock()
		defer b.mu.Unlock()
		r.done, r.err = true, err
	}()
}

// Poll reports the state of uid's run: none, running, or finished with
// err, which is then forgotten.
func (b *Background) Poll(uid types.UID) (RunState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[uid]
	switch {
	case r == nil:
		return RunNone, nil
	case !r.done:
		return RunRunning, nil
	}
	delete(b.runs, uid)
	return RunFinished, r.err
}
