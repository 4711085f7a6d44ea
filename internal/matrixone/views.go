package matrixone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
)

// viewReader reads HAKeeper's view through the log pods' probes, for the
// LogSet controller and the store set controllers at once: a probe
// collector that asks every log pod of a LogSet concurrently, within its
// deadline, and in the background, and enqueues every set that read that
// LogSet's view when an answer changes. The targets' group is the LogSet
// ("namespace/name"): a cluster's four sets share its log pods' answers,
// so each pod is asked once, not once per set.
type viewReader struct {
	views   *probe.Collector[hakeeper.View]
	http    *httpClient
	address func(namespace, pod, ip string) string
	// maxAge is the oldest answer read acted on (Options.MaxViewAge).
	maxAge time.Duration
	now    func() time.Time

	mu sync.Mutex
	// readers are, by LogSet, the sets that read its view: each its
	// controller's trigger and its own group.
	readers map[string]map[viewReaderKey]bool
}

// viewReaderKey is one set that reads a LogSet's view.
type viewReaderKey struct {
	trigger *framework.Trigger
	group   string
}

// sharedViews returns the view reader Setup made for every controller, or
// a reader of the controller's own (tests that make one controller).
func (o Options) sharedViews() *viewReader {
	if o.views != nil {
		return o.views
	}
	return newViewReader(o)
}

func newViewReader(opts Options) *viewReader {
	address := opts.ProbeAddress
	if address == nil {
		address = func(_, _, ip string) string { return net.JoinHostPort(ip, strconv.Itoa(build.ProbePort)) }
	}
	r := &viewReader{
		http:    newHTTPClient(opts.ProbeTimeout),
		address: address,
		maxAge:  opts.MaxViewAge,
		now:     time.Now,
		readers: map[string]map[viewReaderKey]bool{},
	}
	r.views = probe.NewCollector(probe.Options[hakeeper.View]{
		Kind:        "LogSet", // the targets are a LogSet's pods, whichever set reads them
		CallTimeout: opts.ProbeTimeout,
		// A pass waits for fresh answers half as long as a call may
		// take (5 s by default, above the 4.2 s a busy machine's probe
		// took); a call that takes longer still fills the cache, and
		// meanwhile the pass reads the last good view.
		Deadline:    opts.ProbeTimeout / 2,
		MinInterval: opts.ProbeInterval / 2,
		Interval:    opts.ProbeInterval,
		MaxInterval: 3 * opts.ProbeInterval,
		Changed:     viewChanged,
		Notify:      r.notify,
	})
	return r
}

// notify enqueues every set that read the view of the LogSet of group.
func (r *viewReader) notify(group string) {
	r.mu.Lock()
	readers := slices.Collect(maps.Keys(r.readers[group]))
	r.mu.Unlock()
	for _, k := range readers {
		k.trigger.Enqueue(k.group)
	}
}

// viewRead is HAKeeper's view as a pass read it.
type viewRead struct {
	view hakeeper.View
	// at is when the probe answered the view; ok is false when no probe
	// answered one within maxAge, and why then says what each said.
	at  time.Time
	ok  bool
	why string
}

// viewPredates says why a view of HAKeeper answered at viewAt cannot
// justify a restart or a replacement: it was answered before pod became
// ready (at readySince), so it may show the store of a pod that restarted
// since as up and running its replicas. Empty when the view is newer. The
// last good view may be up to MaxViewAge old, longer than RestartSettle,
// so this is checked on its own.
func viewPredates(viewAt time.Time, pod string, readySince time.Time) string {
	if viewAt.Before(readySince) {
		return fmt.Sprintf("the last view of HAKeeper (from %s) predates %s being ready (since %s)",
			viewAt.UTC().Format(time.RFC3339), pod, readySince.UTC().Format(time.RFC3339))
	}
	return ""
}

// read asks the probes of the log pods (those with an address, not
// terminating) of the LogSet of group for the view, on behalf of reader
// (the group of a set, which trigger enqueues whenever the view changes
// from then on, until forget), and returns
// the freshest answer (hakeeper.Freshest) of those younger than maxAge: a
// probe that missed its latest answer (a deadline on a busy machine, a
// restart) gives its last good one while it is that young, and never an
// older one. A pass of an object running an operation (wait: its steps
// decide on the view) asks again the probes whose answers are older than
// MinInterval and waits for them, up to the collector's deadline; every
// other pass reads the answers the background calls keep fresh and waits
// only for the first answer of a log pod not asked before, so that log
// pods that do not answer (a partition) hold no worker.
func (r *viewReader) read(ctx context.Context, group string, trigger *framework.Trigger, reader string, logPods map[int]*corev1.Pod, wait bool) viewRead {
	r.mu.Lock()
	if r.readers[group] == nil {
		r.readers[group] = map[viewReaderKey]bool{}
	}
	r.readers[group][viewReaderKey{trigger, reader}] = true
	r.mu.Unlock()
	var targets []probe.Target
	for _, p := range logPods {
		if p.DeletionTimestamp.IsZero() && p.Status.PodIP != "" {
			targets = append(targets, probe.Target{Group: group, Key: p.Name,
				Address:  r.address(p.Namespace, p.Name, p.Status.PodIP),
				Revision: string(p.UID) + "/" + p.Status.PodIP})
		}
	}
	r.views.Forget(group, targets)
	if len(targets) == 0 {
		return viewRead{why: "no log pod has an address yet"}
	}
	call := func(ctx context.Context, t probe.Target) (hakeeper.View, error) {
		return hakeeper.Get(ctx, r.http, "http://"+t.Address)
	}
	var results map[string]probe.Result[hakeeper.View]
	if wait {
		results = r.views.Collect(ctx, targets, call)
	} else {
		// A log pod not asked yet (every one, when this replica just
		// became leader) is waited for once: without a view the sets
		// would show their serving stores as down (chaos seed 20261203).
		results = r.views.WatchKnown(ctx, targets, call)
	}
	now := r.now()
	var views []hakeeper.View
	answered := map[uint64]time.Time{} // the latest answer of each tick
	var errs []string
	for _, key := range slices.Sorted(maps.Keys(results)) {
		res := results[key]
		if !res.ValueAt.IsZero() && now.Sub(res.ValueAt) <= r.maxAge {
			views = append(views, res.Value)
			if res.ValueAt.After(answered[res.Value.Tick]) {
				answered[res.Value.Tick] = res.ValueAt
			}
			continue
		}
		why := key + ": " + res.Describe()
		if res.OK() { // answered long ago, and asked again since
			why = key + ": no answer since " + res.At.UTC().Format(time.RFC3339)
		}
		if !res.ValueAt.IsZero() {
			why += fmt.Sprintf(" (its last view, from %s, is older than %s)", res.ValueAt.UTC().Format(time.RFC3339), r.maxAge)
		}
		errs = append(errs, why)
	}
	view, ok := hakeeper.Freshest(views)
	if !ok {
		return viewRead{why: strings.Join(errs, "; ")}
	}
	return viewRead{view: view, at: answered[view.Tick], ok: true}
}

// viaLogPod runs call against the first log pod's probe that answers (in
// ordinal order), each call bounded by the probes' HTTP client's timeout:
// the CNs' lock service restart handshake goes through any of them.
func (r *viewReader) viaLogPod(logPods map[int]*corev1.Pod, call func(baseURL string) error) error {
	var errs []error
	for _, ordinal := range slices.Sorted(maps.Keys(logPods)) {
		p := logPods[ordinal]
		if !p.DeletionTimestamp.IsZero() || p.Status.PodIP == "" {
			continue
		}
		err := call("http://" + r.address(p.Namespace, p.Name, p.Status.PodIP))
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
	}
	if len(errs) == 0 {
		return errors.New("no log pod has an address")
	}
	return errors.Join(errs...)
}

// forget stops enqueueing reader, a set that is gone, on changes of the
// view of the LogSet of group, and drops the LogSet's targets once no set
// reads them.
func (r *viewReader) forget(group string, trigger *framework.Trigger, reader string) {
	r.mu.Lock()
	delete(r.readers[group], viewReaderKey{trigger, reader})
	last := len(r.readers[group]) == 0
	if last {
		delete(r.readers, group)
	}
	r.mu.Unlock()
	if last {
		r.views.Forget(group, nil)
	}
}

// viewChanged reports whether two views differ in what the controllers act
// on or show: HAKeeper's state, the shards' members and leaders, the
// stores' states, and the CNs' work states and labels. The ticks move all the time.
func viewChanged(old, cur hakeeper.View) bool {
	return old.State != cur.State || !reflect.DeepEqual(old.LogShards, cur.LogShards) ||
		!maps.Equal(storeStates(old), storeStates(cur))
}

// storeStates maps every store of a view to its state.
func storeStates(v hakeeper.View) map[string]string {
	out := map[string]string{}
	for _, s := range v.LogStores {
		out[s.UUID] = s.State
	}
	for _, s := range v.TNStores {
		out[s.UUID] = s.State
	}
	for _, s := range v.CNStores {
		out[s.UUID] = fmt.Sprintf("%s/%s/%v", s.State, s.WorkState, s.Labels)
	}
	for _, s := range v.ProxyStores {
		out[s.UUID] = "present"
	}
	return out
}
