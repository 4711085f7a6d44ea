package matrixone

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
)

// TestSetsShareTheLogPodsProbes checks that the sets of a cluster read
// their LogSet's view through one probe per log pod, that a changed view
// enqueues every set that read it, and that a set gone is enqueued no
// more and the pods' probes stop with the last set.
func TestSetsShareTheLogPodsProbes(t *testing.T) {
	var calls atomic.Int64
	var mu sync.Mutex
	state := "HAKeeperBootstrapping"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(hakeeper.View{State: state, Tick: uint64(calls.Load())})
	}))
	t.Cleanup(srv.Close)
	opts := Options{ProbeAddress: func(_, _, _ string) string { return strings.TrimPrefix(srv.URL, "http://") }}.withDefaults()
	r := newViewReader(opts)
	t.Cleanup(func() { r.views.Close() })

	queue := func() (*framework.Trigger, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(q.ShutDown)
		trigger := framework.NewTrigger()
		if err := trigger.Start(t.Context(), q); err != nil {
			t.Fatal(err)
		}
		return trigger, q
	}
	logTrigger, logQueue := queue()
	tnTrigger, tnQueue := queue()
	pods := map[int]*corev1.Pod{}
	for i, name := range []string{"mo-log-0", "mo-log-1", "mo-log-2"} {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u" + name)},
			Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	}

	const logSetGroup = "ns/mo-log"
	if read := r.read(t.Context(), logSetGroup, logTrigger, "ns/mo-log", pods, true); !read.ok {
		t.Fatalf("the LogSet's read: %s", read.why)
	}
	if read := r.read(t.Context(), logSetGroup, tnTrigger, "ns/mo-tn", pods, true); !read.ok {
		t.Fatalf("the TNSet's read: %s", read.why)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("the two sets' reads called the probes %d times, want 3 (one per log pod)", got)
	}

	drain := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
		var keys []string
		for q.Len() > 0 {
			item, _ := q.Get()
			keys = append(keys, item.String())
			q.Done(item)
		}
		return keys
	}
	drain(logQueue)
	drain(tnQueue)
	changeView := func(to string) {
		mu.Lock()
		state = to
		mu.Unlock()
		r.read(t.Context(), logSetGroup, logTrigger, "ns/mo-log", pods, true) // asks again once MinInterval has passed
	}
	time.Sleep(opts.ProbeInterval/2 + 100*time.Millisecond)
	changeView("HAKeeperRunning")
	if got := drain(logQueue); len(got) == 0 || got[0] != "ns/mo-log" {
		t.Errorf("the LogSet's queue after the view changed: %v, want ns/mo-log", got)
	}
	if got := drain(tnQueue); len(got) == 0 || got[0] != "ns/mo-tn" {
		t.Errorf("the TNSet's queue after the view changed: %v, want ns/mo-tn", got)
	}

	r.forget(logSetGroup, tnTrigger, "ns/mo-tn")
	time.Sleep(opts.ProbeInterval/2 + 100*time.Millisecond)
	changeView("HAKeeperBootstrapFailed")
	if got := drain(tnQueue); len(got) != 0 {
		t.Errorf("the TNSet, gone, was enqueued: %v", got)
	}
	if got := drain(logQueue); len(got) == 0 {
		t.Error("the LogSet was not enqueued after the view changed again")
	}
	r.forget(logSetGroup, logTrigger, "ns/mo-log")
	if _, ok := r.readers[logSetGroup]; ok {
		t.Error("the LogSet's readers outlive the last set")
	}
}

// TestNewLeaderReadsAViewSeed20261203 is what chaos seed 20261203 found:
// a replica that had just become leader read no view of HAKeeper on its
// first pass of a set (no flow running: it waits for no probe), and the
// TNSet and the ProxySet said "no store is up" for a second over stores
// that served. The first read of log pods not asked before waits for
// their answers.
func TestNewLeaderReadsAViewSeed20261203(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(hakeeper.View{State: "HAKeeperRunning", Tick: 7})
	}))
	t.Cleanup(srv.Close)
	opts := Options{ProbeAddress: func(_, _, _ string) string { return strings.TrimPrefix(srv.URL, "http://") }}.withDefaults()
	r := newViewReader(opts)
	t.Cleanup(func() { r.views.Close() })
	pods := map[int]*corev1.Pod{0: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mo-log-0", UID: "u0"},
		Status: corev1.PodStatus{PodIP: "10.0.0.1"}}}
	read := r.read(t.Context(), "ns/mo-log", framework.NewTrigger(), "ns/mo-proxy", pods, false)
	if !read.ok || read.view.Tick != 7 {
		t.Errorf("a new leader's first read: ok %t, tick %d (%s); want the view of tick 7", read.ok, read.view.Tick, read.why)
	}
}
