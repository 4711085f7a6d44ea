package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server answers GET /<n> with n, except on /hang, where it waits until
// released or the client gives up. It counts the requests per path.
type server struct {
	*httptest.Server
	release chan struct{}
	hangs   atomic.Int32
	calls   atomic.Int32
	// recovered: /recovers answers 9 from then on, and fails before.
	recovered atomic.Bool
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		switch r.URL.Path {
		case "/hang":
			s.hangs.Add(1)
			select {
			case <-s.release:
			case <-r.Context().Done():
			}
		case "/fail":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/recovers":
			if !s.recovered.Load() {
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "9")
		default:
			_, _ = io.WriteString(w, r.URL.Path[1:])
		}
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

// get is the call of the tests: GET the target's address and parse the
// body as a number.
func get(ctx context.Context, t Target) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Address, http.NoBody)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return strconv.Atoi(string(body))
}

func targets(s *server, paths ...string) []Target {
	out := make([]Target, len(paths))
	for i, p := range paths {
		out[i] = Target{Key: p, Address: s.URL + "/" + p}
	}
	return out
}

// TestHungTargetDoesNotDelayCollect checks that Collect returns by its
// deadline with the answers of the healthy targets and a pending result for
// the hung one, and that the hung target is not called again while its call
// is in flight.
func TestHungTargetDoesNotDelayCollect(t *testing.T) {
	s := newServer(t)
	const deadline = 300 * time.Millisecond
	c := NewCollector[int](Options[int]{Kind: "Test", CallTimeout: time.Minute, Deadline: deadline})
	ts := targets(s, "1", "2", "hang", "fail")

	start := time.Now()
	res := c.Collect(t.Context(), ts, get)
	took := time.Since(start)
	if took > deadline+200*time.Millisecond {
		t.Fatalf("Collect took %s with a hung target, want about the deadline %s", took, deadline)
	}
	for key, want := range map[string]int{"1": 1, "2": 2} {
		if r := res[key]; !r.OK() || r.Value != want || r.InFlight {
			t.Errorf("result %s = %+v, want %d", key, r, want)
		}
	}
	if r := res["hang"]; !errors.Is(r.Err, ErrPending) || !r.InFlight || r.OK() {
		t.Errorf("hung result = %+v, want pending and in flight", r)
	}
	if r := res["fail"]; r.Err == nil || r.OK() || r.At.IsZero() {
		t.Errorf("failed result = %+v, want its error", r)
	}

	// Later passes return at once: the hung call is still in flight and is
	// not started again.
	goroutines := runtime.NumGoroutine()
	for range 20 {
		start := time.Now()
		res = c.Collect(t.Context(), ts, get)
		if took := time.Since(start); took > deadline+200*time.Millisecond {
			t.Fatalf("a later Collect took %s", took)
		}
	}
	if n := s.hangs.Load(); n != 1 {
		t.Errorf("the hung target was called %d times, want once", n)
	}
	if g := runtime.NumGoroutine(); g > goroutines+10 {
		t.Errorf("goroutines grew from %d to %d over 20 passes", goroutines, g)
	}
	if r := res["hang"]; !r.InFlight {
		t.Errorf("hung result = %+v, want in flight", r)
	}
}

// TestCallTimeout checks that a call that outlives its timeout is reported
// as failed, and that the target is then called again.
func TestCallTimeout(t *testing.T) {
	s := newServer(t)
	c := NewCollector[int](Options[int]{CallTimeout: 100 * time.Millisecond, Deadline: time.Second})
	ts := targets(s, "hang")
	start := time.Now()
	res := c.Collect(t.Context(), ts, get)
	if took := time.Since(start); took > 800*time.Millisecond {
		t.Errorf("Collect took %s, want about the call timeout", took)
	}
	if r := res["hang"]; r.Err == nil || !errors.Is(r.Err, context.DeadlineExceeded) || r.InFlight {
		t.Errorf("result = %+v, want a deadline error", r)
	}
	c.Collect(t.Context(), ts, get)
	if n := s.hangs.Load(); n != 2 {
		t.Errorf("the target was called %d times, want a new call after the timeout", n)
	}
}

// TestCachedResultsAndAge checks MinInterval caching, the age of results,
// that the last good value survives a failure, and Forget.
func TestCachedResultsAndAge(t *testing.T) {
	s := newServer(t)
	now := time.Unix(1000, 0)
	var clockNanos atomic.Int64
	clockNanos.Store(now.UnixNano())
	clock := func() time.Time { return time.Unix(0, clockNanos.Load()) }
	c := NewCollector[int](Options[int]{MinInterval: 10 * time.Second, Now: clock})
	ts := []Target{{Key: "pod-0", Address: s.URL + "/7"}}

	if r := c.Collect(t.Context(), ts, get)["pod-0"]; !r.OK() || r.Value != 7 {
		t.Fatalf("first result = %+v", r)
	}
	clockNanos.Add(int64(5 * time.Second))
	r := c.Collect(t.Context(), ts, get)["pod-0"]
	if calls := s.calls.Load(); calls != 1 {
		t.Errorf("%d calls within MinInterval, want 1", calls)
	}
	if age := r.Age(clock()); age != 5*time.Second {
		t.Errorf("age = %s, want 5s", age)
	}

	clockNanos.Add(int64(10 * time.Second))
	ts[0].Address = s.URL + "/fail"
	r = c.Collect(t.Context(), ts, get)["pod-0"]
	if r.OK() || r.Err == nil || r.Value != 7 || r.ValueAt.Equal(r.At) {
		t.Errorf("after a failure = %+v, want the error and the last good value", r)
	}

	c.Forget("", nil)
	if r := c.Results(ts)["pod-0"]; !errors.Is(r.Err, ErrPending) || r.Age(clock()) != 0 {
		t.Errorf("after Forget = %+v, want pending", r)
	}
}

// TestCollectHonorsCallerContext checks that a canceled caller context ends
// the wait at once.
func TestCollectHonorsCallerContext(t *testing.T) {
	s := newServer(t)
	c := NewCollector[int](Options[int]{CallTimeout: time.Minute, Deadline: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	c.Collect(ctx, targets(s, "hang"), get)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Collect took %s after its context ended", took)
	}
}

// TestForgetIsScopedToItsGroup checks that forgetting the targets of one
// object leaves another object's cached results alone, even with the same
// keys.
func TestForgetIsScopedToItsGroup(t *testing.T) {
	s := newServer(t)
	c := NewCollector[int](Options[int]{MinInterval: time.Hour})
	a := []Target{{Group: "ns/a", Key: "pod-0", Address: s.URL + "/1"}, {Group: "ns/a", Key: "pod-1", Address: s.URL + "/2"}}
	b := []Target{{Group: "ns/b", Key: "pod-0", Address: s.URL + "/3"}}
	c.Collect(t.Context(), a, get)
	c.Collect(t.Context(), b, get)
	if r := c.Results(b)["pod-0"]; r.Value != 3 {
		t.Fatalf("group b's pod-0 = %+v, want its own value 3", r)
	}

	c.Forget("ns/a", a[:1])
	if r := c.Results(a)["pod-0"]; !r.OK() || r.Value != 1 {
		t.Errorf("kept target of a = %+v, want 1", r)
	}
	if r := c.Results(a)["pod-1"]; !errors.Is(r.Err, ErrPending) {
		t.Errorf("forgotten target of a = %+v, want pending", r)
	}
	if r := c.Results(b)["pod-0"]; !r.OK() || r.Value != 3 {
		t.Errorf("b's target after forgetting a's = %+v, want 3", r)
	}
	c.Forget("ns/b", nil)
	if r := c.Results(b)["pod-0"]; !errors.Is(r.Err, ErrPending) {
		t.Errorf("b's target after forgetting b = %+v, want pending", r)
	}
}

// TestPanickingCallIsAnError checks that a call that panics does not crash
// the process: its panic becomes the target's error and the target can be
// called again.
func TestPanickingCallIsAnError(t *testing.T) {
	c := NewCollector[int](Options[int]{Deadline: time.Second})
	ts := []Target{{Key: "pod-0"}, {Key: "pod-1"}}
	var calls atomic.Int32
	call := func(_ context.Context, tg Target) (int, error) {
		calls.Add(1)
		if tg.Key == "pod-0" {
			panic("boom")
		}
		return 1, nil
	}
	start := time.Now()
	res := c.Collect(t.Context(), ts, call)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("Collect took %s: the panicking call did not report done", took)
	}
	if r := res["pod-0"]; r.OK() || r.InFlight || r.Err == nil || !strings.Contains(r.Err.Error(), "panicked: boom") {
		t.Errorf("panicking target = %+v, want its panic as the error", r)
	}
	if r := res["pod-1"]; !r.OK() || r.Value != 1 {
		t.Errorf("healthy target = %+v, want 1", r)
	}
	c.Collect(t.Context(), ts, call)
	if n := calls.Load(); n != 4 {
		t.Errorf("%d calls over two Collects, want 4", n)
	}
}

// TestWatchNeverWaits checks that Watch returns at once, hung and new
// targets included, and that the background calls fill the results and
// notify the target's group once per change.
func TestWatchNeverWaits(t *testing.T) {
	s := newServer(t)
	notified := make(chan string, 10)
	c := NewCollector[int](Options[int]{CallTimeout: time.Minute, Interval: time.Hour,
		Notify: func(group string) { notified <- group }})
	t.Cleanup(c.Close)
	ts := []Target{{Group: "ns/a", Key: "1", Address: s.URL + "/1"}, {Group: "ns/a", Key: "hang", Address: s.URL + "/hang"}}

	start := time.Now()
	res := c.Watch(ts, get)
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("Watch took %s", took)
	}
	for key, r := range res {
		if !errors.Is(r.Err, ErrPending) {
			t.Errorf("first result of %s = %+v, want pending", key, r)
		}
	}
	select {
	case g := <-notified:
		if g != "ns/a" {
			t.Errorf("notified %q, want ns/a", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after the first answer")
	}
	if r := c.Watch(ts, get)["1"]; !r.OK() || r.Value != 1 {
		t.Errorf("after the answer = %+v, want 1", r)
	}
	if r := c.Watch(ts, get)["hang"]; !r.InFlight || !errors.Is(r.Err, ErrPending) {
		t.Errorf("hung target = %+v, want pending and in flight", r)
	}
	select {
	case g := <-notified:
		t.Errorf("notified %q again without a change", g)
	case <-time.After(200 * time.Millisecond):
	}
	if n := s.hangs.Load(); n != 1 {
		t.Errorf("the hung target was called %d times, want once", n)
	}
}

// TestWatchKnownWaitsForNewTargetsOnly: a target the collector has not
// been asked about is waited for (a fresh leader's first pass must not
// read a serving system as silent), up to the deadline; a known one never.
func TestWatchKnownWaitsForNewTargetsOnly(t *testing.T) {
	s := newServer(t)
	c := NewCollector[int](Options[int]{CallTimeout: time.Minute, Interval: time.Hour, Deadline: 300 * time.Millisecond})
	t.Cleanup(c.Close)
	one := []Target{{Group: "ns/a", Key: "1", Address: s.URL + "/1"}}
	if r := c.WatchKnown(t.Context(), one, get)["1"]; !r.OK() || r.Value != 1 {
		t.Errorf("first read of a new target = %+v, want its answer 1", r)
	}
	withHung := append(slices.Clone(one), Target{Group: "ns/a", Key: "hang", Address: s.URL + "/hang"})
	start := time.Now()
	r := c.WatchKnown(t.Context(), withHung, get)
	if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("a new hung target held the read %s, want the deadline (300ms)", took)
	}
	if !errors.Is(r["hang"].Err, ErrPending) || !r["1"].OK() {
		t.Errorf("results %+v, want the hung one pending and the other answered", r)
	}
	start = time.Now()
	c.WatchKnown(t.Context(), withHung, get)
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("known targets held the read %s, want no wait", took)
	}
}

// TestBackgroundCadence checks that answering targets are called every
// Interval, failing ones back off, a changed Revision calls at once, and a
// change of answer notifies while the same answer does not.
func TestBackgroundCadence(t *testing.T) {
	s := newServer(t)
	var notifications atomic.Int32
	c := NewCollector[int](Options[int]{CallTimeout: time.Second, Interval: 50 * time.Millisecond,
		MaxInterval: 400 * time.Millisecond, Notify: func(string) { notifications.Add(1) }})
	t.Cleanup(c.Close)
	good := []Target{{Group: "g", Key: "good", Address: s.URL + "/5"}}
	c.Watch(good, get)
	time.Sleep(600 * time.Millisecond)
	calls := s.calls.Load()
	if calls < 6 || calls > 14 {
		t.Errorf("%d calls in 600ms at a 50ms interval, want about 12", calls)
	}
	if n := notifications.Load(); n != 1 {
		t.Errorf("%d notifications for the same answer, want 1 (the first)", n)
	}

	c.Forget("g", nil)
	bad := []Target{{Group: "g", Key: "bad", Address: s.URL + "/fail"}}
	before := s.calls.Load()
	c.Watch(bad, get)
	time.Sleep(1200 * time.Millisecond)
	// 0, 50, 150, 350, 750, 1150 ms: about 6 calls, not 24.
	if n := s.calls.Load() - before; n < 4 || n > 8 {
		t.Errorf("%d calls in 1.2s to a failing target, want about 6 with backoff", n)
	}
	if n := notifications.Load(); n != 2 {
		t.Errorf("%d notifications, want 2: the same failure notifies once", n)
	}

	before = s.calls.Load()
	bad[0].Revision = "2"
	c.Watch(bad, get)
	time.Sleep(30 * time.Millisecond)
	if n := s.calls.Load() - before; n != 1 {
		t.Errorf("%d calls within 30ms of a new revision, want 1", n)
	}

	bad[0].Address = s.URL + "/7"
	c.Watch(bad, get)
	time.Sleep(50 * time.Millisecond)
	if r := c.Results(bad)["bad"]; !r.OK() || r.Value != 7 {
		t.Errorf("after the address changed = %+v, want 7", r)
	}
	if n := notifications.Load(); n != 3 {
		t.Errorf("%d notifications, want 3: failure to success notifies", n)
	}
}

// TestRetryIntervalSeesRecoverySoon checks that a target that failed is
// called again after RetryInterval, not Interval, so that its recovery is
// seen (and notified) soon although nothing about it changed; that once it
// answers it is called every Interval again; and that without
// RetryInterval a failure waits an Interval as before.
func TestRetryIntervalSeesRecoverySoon(t *testing.T) {
	s := newServer(t)
	notified := make(chan string, 10)
	c := NewCollector[int](Options[int]{CallTimeout: time.Second, Interval: time.Hour,
		RetryInterval: 50 * time.Millisecond, MaxInterval: 400 * time.Millisecond,
		Notify: func(g string) { notified <- g }})
	t.Cleanup(c.Close)
	target := []Target{{Group: "g", Key: "k", Address: s.URL + "/recovers"}}
	c.Watch(target, get)
	<-notified // the first answer, a failure
	time.Sleep(120 * time.Millisecond)
	s.recovered.Store(true)
	select {
	case <-notified:
	case <-time.After(2 * time.Second):
		t.Fatalf("recovery not seen within 2s (%d calls); an hour's Interval would see it in an hour", s.calls.Load())
	}
	if r := c.Results(target)["k"]; !r.OK() || r.Value != 9 {
		t.Fatalf("after recovery = %+v, want 9", r)
	}
	calls := s.calls.Load()
	time.Sleep(300 * time.Millisecond)
	if n := s.calls.Load() - calls; n != 0 {
		t.Errorf("%d calls in 300ms to a target that answers, want 0 at an hour's Interval", n)
	}

	// Without RetryInterval, a failure waits an Interval.
	s.recovered.Store(false)
	plain := NewCollector[int](Options[int]{CallTimeout: time.Second, Interval: time.Hour})
	t.Cleanup(plain.Close)
	before := s.calls.Load()
	plain.Watch([]Target{{Group: "g", Key: "plain", Address: s.URL + "/recovers"}}, get)
	time.Sleep(300 * time.Millisecond)
	if n := s.calls.Load() - before; n != 1 {
		t.Errorf("%d calls in 300ms without RetryInterval, want 1 (the first)", n)
	}
}

// TestChangedDecidesNotifications checks that a change Options.Changed
// ignores notifies nobody.
func TestChangedDecidesNotifications(t *testing.T) {
	var n atomic.Int32
	var notifications atomic.Int32
	c := NewCollector[int](Options[int]{Interval: 20 * time.Millisecond,
		Changed: func(old, cur int) bool { return old/100 != cur/100 },
		Notify:  func(string) { notifications.Add(1) }})
	t.Cleanup(c.Close)
	c.Watch([]Target{{Key: "counter"}}, func(context.Context, Target) (int, error) { return int(n.Add(7)), nil })
	time.Sleep(400 * time.Millisecond)
	// About 20 answers from 7 to 140: the first, and crossing 100.
	if got := notifications.Load(); got != 2 {
		t.Errorf("%d notifications for %d answers, want 2", got, n.Load()/7)
	}
}

// TestIdleTargetsAreDropped checks that a target nobody asks for goes.
func TestIdleTargetsAreDropped(t *testing.T) {
	s := newServer(t)
	c := NewCollector[int](Options[int]{Interval: 20 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	t.Cleanup(c.Close)
	c.Watch(targets(s, "1"), get)
	time.Sleep(300 * time.Millisecond)
	if n := c.Len(); n != 0 {
		t.Errorf("%d targets known after their idle timeout, want 0", n)
	}
	calls := s.calls.Load()
	time.Sleep(100 * time.Millisecond)
	if s.calls.Load() != calls {
		t.Error("a dropped target is still called")
	}
}

// TestIntervalGrowsWithTheFailure checks the background interval of a
// target: Interval while it answers; RetryInterval doubled per failure up
// to MaxInterval; past that, a tenth of the time it has been failing, up to
// LongFailureMaxInterval.
func TestIntervalGrowsWithTheFailure(t *testing.T) {
	c := NewCollector[int](Options[int]{Interval: 10 * time.Second, RetryInterval: 500 * time.Millisecond,
		MaxInterval: 30 * time.Second, LongFailureMaxInterval: 5 * time.Minute})
	t.Cleanup(c.Close)
	now := time.Now()
	for _, tc := range []struct {
		failures   int
		failingFor time.Duration
		want       time.Duration
	}{
		{0, 0, 10 * time.Second},
		{1, 0, 500 * time.Millisecond},
		{4, 8 * time.Second, 4 * time.Second},
		{12, 90 * time.Second, 30 * time.Second},
		{20, 4 * time.Minute, 30 * time.Second},
		{20, 10 * time.Minute, time.Minute},
		{30, time.Hour, 5 * time.Minute},
	} {
		e := &entry[int]{failures: tc.failures, failingSince: now.Add(-tc.failingFor)}
		if got := c.interval(e, now); got != tc.want {
			t.Errorf("%d failures over %s: interval %s, want %s", tc.failures, tc.failingFor, got, tc.want)
		}
	}
	// LongFailureMaxInterval is at least MaxInterval.
	short := NewCollector[int](Options[int]{MaxInterval: time.Minute, LongFailureMaxInterval: time.Second})
	t.Cleanup(short.Close)
	if got := short.interval(&entry[int]{failures: 30, failingSince: now.Add(-time.Hour)}, now); got != time.Minute {
		t.Errorf("LongFailureMaxInterval under MaxInterval: interval %s, want MaxInterval, 1m", got)
	}
}
