package probe

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stewardhq/steward/internal/framework/metrics"
)

// Default timings of a [Collector].
const (
	DefaultCallTimeout = 2 * time.Second
	DefaultDeadline    = 3 * time.Second
)

// Target is one endpoint to probe, typically a pod.
type Target struct {
	// Group is the object the target belongs to, for example the owner's
	// namespace/name or UID; Forget only drops targets of one group, so one
	// object's pass never drops another's results.
	Group string
	// Key identifies the target within its group, in the cache and in
	// results (for example the pod's name).
	Key string
	// Address is where to reach the target, for example "10.0.0.7:8080".
	Address string
}

// Result is the latest answer of one target.
type Result[R any] struct {
	// Value is the answer of the last successful call.
	Value R
	// Err is the error of the last call, nil when it succeeded. When no call
	// has completed yet, Err is ErrPending.
	Err error
	// At is when the last call completed; zero when none has.
	At time.Time
	// ValueAt is when Value was obtained; zero when no call succeeded.
	ValueAt time.Time
	// InFlight reports whether a call is still running.
	InFlight bool
}

// Age returns how old the last answer is at now; zero when there is none.
func (r Result[R]) Age(now time.Time) time.Duration {
	if r.At.IsZero() {
		return 0
	}
	return now.Sub(r.At)
}

// OK reports whether the last call succeeded.
func (r Result[R]) OK() bool {
	return r.Err == nil && !r.At.IsZero()
}

// ErrPending is the error of a target that has not answered yet.
var ErrPending = pendingError{}

type pendingError struct{}

func (pendingError) Error() string { return "no answer yet" }

// CallFunc calls one target. It must honor ctx's deadline.
type CallFunc[R any] func(ctx context.Context, t Target) (R, error)

// Options configure a [Collector].
type Options struct {
	// Kind labels the collector's metrics, for example "ZookeeperCluster".
	Kind string
	// CallTimeout bounds each call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// Deadline bounds how long Collect waits for answers (default
	// DefaultDeadline). A deadline on Collect's ctx that comes earlier wins.
	Deadline time.Duration
	// MinInterval is the minimum time between two calls to one target; a
	// younger cached answer is returned without calling again. Zero calls
	// on every Collect.
	MinInterval time.Duration
	// Now returns the current time; tests set it. Default time.Now.
	Now func() time.Time
}

// Collector probes targets concurrently and caches their answers. It is safe
// for concurrent use; create one per controller and keep it for the life of
// the process.
type Collector[R any] struct {
	opts Options

	mu    sync.Mutex
	state map[cacheKey]*entry[R]
}

// cacheKey identifies a target across groups.
type cacheKey struct{ group, key string }

func keyOf(t Target) cacheKey { return cacheKey{group: t.Group, key: t.Key} }

type entry[R any] struct {
	result Result[R]
	// done is closed when the running call ends; nil when none runs.
	done chan struct{}
}

// NewCollector returns a collector with opts, defaults filled in.
func NewCollector[R any](opts Options) *Collector[R] {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Deadline <= 0 {
		opts.Deadline = DefaultDeadline
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Collector[R]{opts: opts, state: map[cacheKey]*entry[R]{}}
}

// Collect calls every target that has no call in flight and no answer
// younger than MinInterval, waits until those calls answered or the
// deadline passed, and returns the latest result of each target, keyed by
// Target.Key. It never waits longer than the deadline, whatever the targets
// do. The calls run with their own timeout, detached from ctx, so a call cut
// short by the deadline still fills the cache for the next Collect.
func (c *Collector[R]) Collect(ctx context.Context, targets []Target, call CallFunc[R]) map[string]Result[R] {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Deadline)
	defer cancel()

	var waits []chan struct{}
	c.mu.Lock()
	for _, t := range targets {
		e := c.state[keyOf(t)]
		if e == nil {
			e = &entry[R]{result: Result[R]{Err: ErrPending}}
			c.state[keyOf(t)] = e
		}
		// Wait only for the calls started here: a call left over from an
		// earlier Collect has already had its deadline, and a hung target
		// must not cost every pass a full deadline.
		if e.done == nil && c.due(e) {
			e.done = make(chan struct{})
			waits = append(waits, e.done)
			go c.run(e, t, call)
		}
	}
	c.mu.Unlock()

	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return c.Results(targets)
}

// Results returns the cached result of each target without calling any.
func (c *Collector[R]) Results(targets []Target) map[string]Result[R] {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Result[R], len(targets))
	for _, t := range targets {
		r := Result[R]{Err: ErrPending}
		if e := c.state[keyOf(t)]; e != nil {
			r = e.result
			r.InFlight = e.done != nil
		}
		out[t.Key] = r
	}
	return out
}

// Forget drops the cached results of the targets of group that are not in
// keep, for example the pods of an object that no longer exist; Forget(group,
// nil) drops the whole group, for an object that is gone. Other groups are
// untouched. Calls in flight for dropped targets finish unseen.
func (c *Collector[R]) Forget(group string, keep []Target) {
	keys := make(map[string]bool, len(keep))
	for _, t := range keep {
		keys[t.Key] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.state {
		if k.group == group && !keys[k.key] {
			delete(c.state, k)
		}
	}
}

// due reports whether e's answer is old enough to call again. c.mu is held.
func (c *Collector[R]) due(e *entry[R]) bool {
	if c.opts.MinInterval <= 0 || e.result.At.IsZero() {
		return true
	}
	return c.opts.Now().Sub(e.result.At) >= c.opts.MinInterval
}

// run makes one call and stores its result.
func (c *Collector[R]) run(e *entry[R], t Target, call CallFunc[R]) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.CallTimeout)
	defer cancel()
	start := c.opts.Now()
	v, err := safeCall(ctx, t, call)
	end := c.opts.Now()

	metrics.ProbeDuration.WithLabelValues(c.opts.Kind).Observe(end.Sub(start).Seconds())
	if err != nil {
		metrics.ProbeFailuresTotal.WithLabelValues(c.opts.Kind).Inc()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	e.result.At = end
	e.result.Err = err
	if err == nil {
		e.result.Value = v
		e.result.ValueAt = end
	}
	close(e.done)
	e.done = nil
}

// safeCall makes the call, turning a panic into the target's error: a bug in
// one probe must not take the operator down.
func safeCall[R any](ctx context.Context, t Target, call CallFunc[R]) (v R, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("probe of %s panicked: %v", t.Key, r)
		}
	}()
	return call(ctx, t)
}
