package oceanbase

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// background runs one long statement per cluster outside the reconcile
// workers, so that a step can start it and poll it.
type background struct {
	mu   sync.Mutex
	runs map[types.UID]*run
}

type run struct {
	done bool
	err  error
}

func newBackground() *background { return &background{runs: map[types.UID]*run{}} }

func (b *background) start(uid types.UID, f func(context.Context) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &run{}
	b.runs[uid] = r
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bootstrapTimeout)
		defer cancel()
		err := f(ctx)
		b.mu.Lock()
		defer b.mu.Unlock()
		r.done, r.err = true, err
	}()
}

// poll reports a run's state: none (never started, or its outcome was
// already taken), running, or finished with err, which is then forgotten.
func (b *background) poll(uid types.UID) (state runState, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[uid]
	switch {
	case r == nil:
		return runNone, nil
	case !r.done:
		return runRunning, nil
	}
	delete(b.runs, uid)
	return runFinished, r.err
}

type runState int

const (
	runNone runState = iota
	runRunning
	runFinished
)
