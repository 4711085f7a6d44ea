package probe

import (
	"container/heap"
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/stewardhq/steward/internal/framework/metrics"
)

// Default timings of a [Collector].
const (
	DefaultCallTimeout = 2 * time.Second
	DefaultDeadline    = 3 * time.Second
	DefaultInterval    = 10 * time.Second
	DefaultMaxInterval = 30 * time.Second
	// DefaultLongFailureMaxInterval bounds the interval of a target that
	// has kept failing for long (Options.LongFailureMaxInterval).
	DefaultLongFailureMaxInterval = 5 * time.Minute
	DefaultIdleTimeout            = 10 * time.Minute
)

// Target is one endpoint to probe, typically a pod.
type Target struct {
	// Group is the object the target belongs to, as "namespace/name":
	// Forget only drops targets of one group, so one object's pass never
	// drops another's results, and Options.Notify names the object whose
	// target's answer changed.
	Group string
	// Key identifies the target within its group, in the cache and in
	// results (for example the pod's UID).
	Key string
	// Address is where to reach the target, for example "10.0.0.7:8080".
	Address string
	// Revision is the target's state as the cluster sees it, opaque to the
	// collector (for example the pod's resourceVersion). A target whose
	// Revision or Address changed is called again at once: a pod that just
	// turned Ready need not wait for its next turn.
	Revision string
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

// Class returns the class of the last call's error; ClassNone when it
// succeeded.
func (r Result[R]) Class() Class { return Classify(r.Err) }

// Describe returns the stable text of the last call's error (see the
// package function Describe); empty when it succeeded.
func (r Result[R]) Describe() string { return Describe(r.Err) }

// ErrPending is the error of a target that has not answered yet.
var ErrPending = pendingError{}

type pendingError struct{}

func (pendingError) Error() string { return "no answer yet" }

// CallFunc calls one target. It must honor ctx's deadline.
type CallFunc[R any] func(ctx context.Context, t Target) (R, error)

// Options configure a [Collector].
type Options[R any] struct {
	// Kind labels the collector's metrics, for example "ZookeeperCluster".
	Kind string
	// CallTimeout bounds each call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// Deadline bounds how long Collect waits for answers (default
	// DefaultDeadline). A deadline on Collect's ctx that comes earlier wins.
	Deadline time.Duration
	// MinInterval is the minimum time between two calls that Collect
	// makes to one target; a younger answer is returned without calling
	// again. Zero calls on every Collect.
	MinInterval time.Duration
	// Interval is how often a target that answers is called in the
	// background (default DefaultInterval).
	Interval time.Duration
	// RetryInterval is how soon a target whose call failed is called
	// again; it doubles with every failure in a row up to MaxInterval
	// (default Interval). A server that stops answering "not serving"
	// without its pod changing (a survivor that rejoins once replacements
	// form a quorum) is then seen within seconds, not an Interval later.
	RetryInterval time.Duration
	// MaxInterval bounds the background calls to a target that keeps
	// failing: its interval doubles from RetryInterval with every failure
	// up to MaxInterval (default DefaultMaxInterval, at least Interval).
	// A Revision change calls it at once all the same.
	MaxInterval time.Duration
	// LongFailureMaxInterval bounds the background calls to a target that
	// has kept failing for long: past MaxInterval, its interval grows to a
	// tenth of the time it has been failing, up to this (default
	// DefaultLongFailureMaxInterval, at least MaxInterval). A server that
	// comes back is seen within a tenth of its outage, and a thousand
	// partitioned clusters cost few calls: their failing calls were most
	// of the operator's idle CPU (docs/scale.md).
	LongFailureMaxInterval time.Duration
	// IdleTimeout drops a target that no Collect or Watch asked for in this
	// long (default DefaultIdleTimeout), for an object whose controller
	// stopped looking at it without a Forget.
	IdleTimeout time.Duration
	// Changed reports whether two successful answers differ in a way the
	// controller acts on (default: they are not deeply equal). Leave out
	// what moves all the time, such as counters.
	Changed func(old, cur R) bool
	// Notify is called, outside any lock, with a target's Group when a
	// background or Collect call's answer changed: the first answer, success
	// turning to failure or back, a failure of another class or text
	// ([Describe]), or an answer that Changed says differs. A controller
	// enqueues the object there. Nil notifies nobody.
	Notify func(group string)
	// Now returns the current time for the results' timestamps and
	// MinInterval; tests set it. Default time.Now. Background scheduling
	// runs on the real clock.
	Now func() time.Time
}

// Collector probes targets concurrently, in the background at their own
// cadence and on demand, and caches their answers. It is safe for
// concurrent use; create one per controller and keep it for the life of the
// process (or Close it).
//
// A target is known to the collector from the first Collect or Watch that
// names it until Forget drops it or no one asked for it for IdleTimeout.
// While it is known, one scheduler goroutine calls it every Interval (with
// backoff while it fails), and never twice at once: a hung target costs
// one goroutine, not one per pass.
type Collector[R any] struct {
	opts Options[R]

	mu    sync.Mutex
	state map[cacheKey]*entry[R]
	queue schedule[R]

	start  sync.Once
	wake   chan struct{}
	closed chan struct{}
	close  sync.Once
}

// cacheKey identifies a target across groups.
type cacheKey struct{ group, key string }

func keyOf(t Target) cacheKey { return cacheKey{group: t.Group, key: t.Key} }

type entry[R any] struct {
	target Target
	call   CallFunc[R]
	result Result[R]
	// done is closed when the running call ends; nil when none runs.
	done chan struct{}
	// again: the target changed while a call ran; call it again at once.
	again bool
	// failures counts the calls that failed in a row, for the backoff;
	// failingSince is when the first of them ended.
	failures     int
	failingSince time.Time
	// asked is the last time a Collect or Watch named the target.
	asked time.Time
	// next is when the scheduler calls the target; index is its place in
	// the queue, -1 while a call runs or once dropped.
	next  time.Time
	index int
	// dropped: Forget or the idle timeout removed the target.
	dropped bool
}

// NewCollector returns a collector with opts, defaults filled in.
func NewCollector[R any](opts Options[R]) *Collector[R] {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Deadline <= 0 {
		opts.Deadline = DefaultDeadline
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = opts.Interval
	}
	if opts.MaxInterval <= 0 {
		opts.MaxInterval = DefaultMaxInterval
	}
	opts.MaxInterval = max(opts.MaxInterval, opts.Interval)
	if opts.LongFailureMaxInterval <= 0 {
		opts.LongFailureMaxInterval = DefaultLongFailureMaxInterval
	}
	opts.LongFailureMaxInterval = max(opts.LongFailureMaxInterval, opts.MaxInterval)
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Changed == nil {
		opts.Changed = func(old, cur R) bool { return !reflect.DeepEqual(old, cur) }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Collector[R]{
		opts:   opts,
		state:  map[cacheKey]*entry[R]{},
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
}

// Watch makes sure every target is probed in the background and returns
// the latest result of each, keyed by Target.Key, without waiting for any
// call: a pass that reads it never blocks on a target, whatever the target
// does. A target named for the first time is called at once and reads as
// ErrPending until it answers; Options.Notify says when it has.
func (c *Collector[R]) Watch(targets []Target, call CallFunc[R]) map[string]Result[R] {
	c.mu.Lock()
	for _, t := range targets {
		c.track(t, call)
	}
	c.mu.Unlock()
	return c.Results(targets)
}

// WatchKnown is Watch for the targets the collector has been asked about
// before; when one of targets is new to it, it is Collect instead: it
// calls them and waits for their answers, up to the deadline. A pass
// right after the collector started (a replica that just became leader)
// or after a new pod appeared would otherwise read those targets as
// ErrPending, and show a system that answers as one that does not; once
// asked, a target never holds a pass up again.
func (c *Collector[R]) WatchKnown(ctx context.Context, targets []Target, call CallFunc[R]) map[string]Result[R] {
	c.mu.Lock()
	known := true
	for _, t := range targets {
		if c.state[keyOf(t)] == nil {
			known = false
			break
		}
	}
	c.mu.Unlock()
	if known {
		return c.Watch(targets, call)
	}
	return c.Collect(ctx, targets, call)
}

// Collect calls every target that has no call in flight and no answer
// younger than MinInterval, waits until those calls answered or the
// deadline passed, and returns the latest result of each target, keyed by
// Target.Key. It never waits longer than the deadline, whatever the targets
// do, and only for the calls it started: a call left over from an earlier
// Collect has had its deadline already. Calls run with their own timeout,
// detached from ctx, so a call cut short by the deadline still fills the
// cache. Use it where a decision needs answers younger than MinInterval
// (an operation's step), and Watch everywhere else.
func (c *Collector[R]) Collect(ctx context.Context, targets []Target, call CallFunc[R]) map[string]Result[R] {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Deadline)
	defer cancel()

	var waits []chan struct{}
	c.mu.Lock()
	for _, t := range targets {
		e := c.track(t, call)
		if e.done == nil && c.due(e) {
			c.queue.remove(e)
			waits = append(waits, c.run(e))
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

// Forget drops the targets of group that are not in keep, for example the
// pods of an object that no longer exist; Forget(group, nil) drops the
// whole group, for an object that is gone. Other groups are untouched.
// Calls in flight for dropped targets finish unseen.
func (c *Collector[R]) Forget(group string, keep []Target) {
	keys := make(map[string]bool, len(keep))
	for _, t := range keep {
		keys[t.Key] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.state {
		if k.group == group && !keys[k.key] {
			c.drop(k, e)
		}
	}
}

// Len returns the number of targets the collector knows.
func (c *Collector[R]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state)
}

// Close stops the background calls; calls in flight finish unseen. Collect
// and Watch still work after Close, without background calls.
func (c *Collector[R]) Close() {
	c.close.Do(func() { close(c.closed) })
}

// track returns t's entry, creating and scheduling it when it is new, and
// notes that it was asked for. A target whose address or revision changed
// is due at once. c.mu is held.
func (c *Collector[R]) track(t Target, call CallFunc[R]) *entry[R] {
	c.start.Do(func() { go c.schedule() })
	now := time.Now()
	e := c.state[keyOf(t)]
	if e == nil {
		e = &entry[R]{target: t, result: Result[R]{Err: ErrPending}, index: -1}
		c.state[keyOf(t)] = e
		c.reschedule(e, now)
	}
	e.asked, e.call = now, call
	if e.target.Address != t.Address || e.target.Revision != t.Revision {
		e.target, e.failures = t, 0
		if e.done != nil {
			e.again = true
		} else {
			c.reschedule(e, now)
		}
	}
	return e
}

// reschedule puts e in the queue at when and wakes the scheduler. c.mu is
// held.
func (c *Collector[R]) reschedule(e *entry[R], when time.Time) {
	e.next = when
	c.queue.put(e)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drop forgets e. c.mu is held.
func (c *Collector[R]) drop(k cacheKey, e *entry[R]) {
	c.queue.remove(e)
	e.dropped = true
	delete(c.state, k)
}

// due reports whether e's answer is old enough for Collect to call again.
// c.mu is held.
func (c *Collector[R]) due(e *entry[R]) bool {
	if c.opts.MinInterval <= 0 || e.result.At.IsZero() {
		return true
	}
	return c.opts.Now().Sub(e.result.At) >= c.opts.MinInterval
}

// interval is how long after its last call, at now, e is called again:
// Interval while it answers; RetryInterval after a failure, doubled for
// every further failure in a row, up to MaxInterval; and once a tenth of
// the time it has been failing is longer, that, up to
// LongFailureMaxInterval.
func (c *Collector[R]) interval(e *entry[R], now time.Time) time.Duration {
	if e.failures == 0 {
		return c.opts.Interval
	}
	d := c.opts.RetryInterval
	for i := 1; i < e.failures && d < c.opts.MaxInterval; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxInterval)
	if long := now.Sub(e.failingSince) / 10; long > d {
		d = min(long, c.opts.LongFailureMaxInterval)
	}
	return d
}

// schedule is the scheduler goroutine: it starts the calls that are due
// and drops the targets nobody asked for in IdleTimeout.
func (c *Collector[R]) schedule() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		now := time.Now()
		for len(c.queue) > 0 && !c.queue[0].next.After(now) {
			e := heap.Pop(&c.queue).(*entry[R])
			if now.Sub(e.asked) > c.opts.IdleTimeout {
				c.drop(keyOf(e.target), e)
				continue
			}
			c.run(e)
		}
		wait := time.Hour
		if len(c.queue) > 0 {
			wait = c.queue[0].next.Sub(now)
		}
		c.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-c.wake:
		case <-timer.C:
		case <-c.closed:
			return
		}
	}
}

// run starts one call of e, which is out of the queue, and returns the
// channel closed when it ends. c.mu is held.
func (c *Collector[R]) run(e *entry[R]) chan struct{} {
	e.done = make(chan struct{})
	go c.call(e, e.target, e.call)
	return e.done
}

// call makes one call and stores its result, schedules the next, and
// notifies when the answer changed.
func (c *Collector[R]) call(e *entry[R], t Target, call CallFunc[R]) {
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
	old := e.result
	e.result.At = end
	e.result.Err = err
	if err == nil {
		e.result.Value = v
		e.result.ValueAt = end
		e.failures = 0
	} else {
		if e.failures == 0 {
			e.failingSince = time.Now()
		}
		e.failures++
	}
	close(e.done)
	e.done = nil
	changed := !e.dropped && c.changed(old, e.result)
	if !e.dropped {
		now := time.Now()
		next := now.Add(c.interval(e, now))
		if e.again {
			next, e.again = now, false
		}
		c.reschedule(e, next)
	}
	c.mu.Unlock()

	if changed {
		metrics.ProbeChangesTotal.WithLabelValues(c.opts.Kind).Inc()
		if c.opts.Notify != nil {
			c.opts.Notify(t.Group)
		}
	}
}

// changed reports whether the answer moved in a way worth a pass.
func (c *Collector[R]) changed(old, cur Result[R]) bool {
	switch {
	case old.At.IsZero():
		return true
	case (old.Err == nil) != (cur.Err == nil):
		return true
	case cur.Err != nil:
		return Describe(old.Err) != Describe(cur.Err)
	default:
		return c.opts.Changed(old.Value, cur.Value)
	}
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

// schedule is the scheduler's queue: a min-heap of entries by next.
type schedule[R any] []*entry[R]

func (s schedule[R]) Len() int           { return len(s) }
func (s schedule[R]) Less(i, j int) bool { return s[i].next.Before(s[j].next) }
func (s schedule[R]) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index, s[j].index = i, j
}

func (s *schedule[R]) Push(x any) {
	e := x.(*entry[R])
	e.index = len(*s)
	*s = append(*s, e)
}

func (s *schedule[R]) Pop() any {
	old := *s
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	e.index = -1
	return e
}

// put adds e, or moves it to its new place when it is queued already.
func (s *schedule[R]) put(e *entry[R]) {
	if e.index >= 0 {
		heap.Fix(s, e.index)
		return
	}
	heap.Push(s, e)
}

// remove takes e out of the queue when it is in it.
func (s *schedule[R]) remove(e *entry[R]) {
	if e.index >= 0 {
		heap.Remove(s, e.index)
	}
}
