//go:build bench

package scale

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

const (
	// workers is how many requests the benchmark's own client has in
	// flight, for the plain creates and for the clusters alike: enough
	// that the client is not what limits either.
	workers = 32
	// clientQPS and clientBurst rate-limit the benchmark's client for the
	// clusters (the plain creates have no limit).
	clientQPS, clientBurst = 500, 1000
	// minPlainCreates is the fewest plain creates that time the API
	// server: 500 took half a second, and varied by half from run to run.
	minPlainCreates = 2000
	// settle is how long no cluster, part or child may have changed before
	// the idle window starts, once all are ready: the operator's last
	// passes of the creation finish; settleLimit bounds the wait (a status
	// that keeps changing shows in the idle window).
	settle, settleLimit = 30 * time.Second, 5 * time.Minute
)

// BenchmarkScale runs, for each kind (kinds), SCALE_CLUSTERS clusters
// (default 1000) through create, idle (SCALE_IDLE, default 2m) and delete,
// with their pods on simulated nodes, and prints what each phase cost the
// operator and the cluster; doc.go lists the figures. BenchmarkScale/Mixed
// does the same with every kind at once, SCALE_CLUSTERS in all, an equal
// share of each.
func BenchmarkScale(b *testing.B) {
	n := envInt(b, "SCALE_CLUSTERS", 1000)
	idle := envDuration(b, "SCALE_IDLE", 2*time.Minute)
	timeout := envDuration(b, "SCALE_TIMEOUT", 10*time.Minute+time.Duration(n)*2*time.Second)
	runs := map[string][]kind{"Mixed": kinds}
	names := []string{}
	for _, kd := range kinds {
		runs[kd.name] = []kind{kd}
		names = append(names, kd.name)
	}
	for _, name := range append(names, "Mixed") {
		b.Run(name, func(b *testing.B) {
			kds := runs[name]
			if n < len(kds) {
				b.Fatalf("SCALE_CLUSTERS=%d: the run needs at least one cluster of each of its %d kinds", n, len(kds))
			}
			var schemes []func(*runtime.Scheme) error
			for _, kd := range kds {
				schemes = append(schemes, kd.addToScheme)
			}
			for b.Loop() {
				r := &run{b: b, name: name, kds: kds, n: n - n%len(kds), idle: idle, timeout: timeout,
					k: benchkube.Connect(b, clientQPS, clientBurst, schemes...)}
				r.run()
			}
		})
	}
}

// run is one run of one kind, or of several (Mixed).
type run struct {
	b             *testing.B
	name          string
	kds           []kind
	n             int
	idle, timeout time.Duration
	k             *benchkube.Kube
	ns            string
	t             *tracker
}

// clusterObjects returns an empty object of each of the run's kinds.
func (r *run) clusterObjects() []client.Object {
	objs := make([]client.Object, len(r.kds))
	for i, kd := range r.kds {
		objs[i] = kd.newObject("", "")
	}
	return objs
}

// cluster returns the kind and the name of the run's i-th cluster: the
// kinds take turns.
func (r *run) cluster(i int) (kind, string) {
	kd := r.kds[i%len(r.kds)]
	return kd, fmt.Sprintf("%s-%d", kd.short, i/len(r.kds))
}

// scrape is the state of the operator and the cluster at one moment.
type scrape struct {
	at    time.Time
	op    benchkube.Operator
	api   benchkube.Metrics
	audit int64
	procs map[string]procStat
}

func (r *run) scrape() scrape {
	return scrape{
		at: time.Now(), op: r.k.OperatorMetrics(r.b), audit: auditSize(), procs: localkubeProcs(),
		api: r.k.APIServerMetrics(r.b, func(name string) bool {
			return name == "apiserver_request_total" || name == "apiserver_storage_size_bytes" ||
				name == "apiserver_flowcontrol_rejected_requests_total" || strings.HasPrefix(name, "process_")
		}),
	}
}

func (r *run) run() {
	b := r.b
	r.checkCapacity()
	fmt.Printf("%s: the operator's leader is %s\n", b.Name(), r.k.WaitForLeader(b, 2*time.Minute))
	empty := r.scrape()
	plainRate := r.plainCreateRate()

	r.ns = r.k.Namespace(b, "scale-"+strings.ToLower(r.name), r.clusterObjects()...)
	r.t = track(b, r.k, r.kds, r.ns)

	// Create: from the first create sent until every cluster's
	// StatefulSets are ready.
	prof := newProfiler(r)
	before := r.scrape()
	prof.cpu("create")
	start, applied, retries := r.createAll()
	r.t.waitFor(b, "every cluster's StatefulSets created", r.timeout, func(c counts) bool { return c.sets >= r.n })
	r.t.waitFor(b, "every cluster's StatefulSets ready", r.timeout, func(c counts) bool { return c.ready >= r.n })
	created := r.scrape()
	prof.wait()
	prof.heap("created")
	setsAt, readyAt := r.t.last(r.t.setsAt), r.t.last(r.t.readyAt)
	setLat, readyLat := r.t.latencies()
	podCreated, claimsBound, scheduled, podReady := r.t.stages()

	// Idle.
	fmt.Printf("%s: settled for %s after every StatefulSet was ready (nothing changed for %s)\n", b.Name(),
		r.t.quiet(settle, settleLimit).Round(time.Second), settle)
	idleFrom := r.scrape()
	r.t.count(true)
	prof.cpu("idle")
	minutes := newIdleMinute(b, r.k, idleFrom)
	renewals := r.k.CountLeaseRenewalsEvery(b, r.idle, time.Minute, minutes.tick)
	changes, examples := r.t.count(false)
	prof.wait()
	idleTo := r.scrape()
	prof.heap("idle")

	// Delete: one delete-collection, until every cluster is gone, then
	// until their pods and claims are. The API server ends a request after
	// a minute while it goes on deleting (a thousand clusters, each through
	// its finalizer, took longer); a second delete-collection takes what is
	// left.
	deleteAt := time.Now()
	for _, obj := range r.clusterObjects() {
		for attempt := 1; ; attempt++ {
			err := r.k.C.DeleteAllOf(b.Context(), obj, client.InNamespace(r.ns))
			if err == nil {
				break
			}
			if attempt == 3 {
				b.Fatalf("delete the clusters: %v", err)
			}
			b.Logf("delete the clusters (attempt %d): %v; again", attempt, err)
		}
	}
	goneAt := r.t.waitFor(b, "every cluster gone", r.timeout, func(c counts) bool { return c.clusters == 0 })
	emptyAt := r.t.waitFor(b, "every pod and claim gone", r.timeout, func(c counts) bool { return c.pods == 0 && c.claims == 0 })
	deleted := r.scrape()

	rep := &report{b: b, n: float64(r.n), kds: r.kds, clusterKinds: r.t.clusterKinds}
	rep.create(before, created, start, applied, setsAt, readyAt, setLat, readyLat, retries, plainRate)
	rep.stages(podCreated, claimsBound, scheduled, podReady)
	rep.idle(idleFrom, idleTo, renewals, changes, examples, minutes.last)
	rep.delete(idleTo, deleted, deleteAt, goneAt, emptyAt)
	rep.memory(empty, created, idleTo)
	rep.restarts(r.k, empty, deleted)
}

// checkCapacity fails early when the simulated nodes cannot take the
// clusters' pods, rather than after a timeout.
func (r *run) checkCapacity() {
	b := r.b
	nodes, err := r.k.CS.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		b.Fatal(err)
	}
	free := int64(0)
	for _, node := range nodes.Items {
		pods, err := r.k.CS.CoreV1().Pods("").List(b.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
		if err != nil {
			b.Fatal(err)
		}
		free += node.Status.Allocatable.Pods().Value() - int64(len(pods.Items))
	}
	need := int64(0)
	for i := range r.n {
		kd, _ := r.cluster(i)
		need += int64(kd.pods)
	}
	if free < need {
		b.Fatalf("%d clusters need %d pods on simulated nodes; %d simulated nodes have room for %d: "+
			"bring the cluster up with more (make down; make bench-scale, or localkube up --simulated-nodes 2 --simulated-pod-capacity %d)",
			r.n, need, len(nodes.Items), free, (need+1)/2+100)
	}
}

// plainCreateRate times the API server alone: max(N, 2000) ConfigMaps
// created by workers concurrent requests from a client without a rate
// limit, in a namespace that is gone again before the clusters start.
func (r *run) plainCreateRate() float64 {
	b := r.b
	k := benchkube.Connect(b, -1, 0)
	ns, err := k.CS.CoreV1().Namespaces().Create(b.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-plain-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	count := max(r.n, minPlainCreates)
	start := time.Now()
	parallel(b, count, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}
		_, err := k.CS.CoreV1().ConfigMaps(ns.Name).Create(b.Context(), cm, metav1.CreateOptions{})
		return err
	})
	took := time.Since(start)
	if err := k.CS.CoreV1().Namespaces().Delete(b.Context(), ns.Name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		_, err := k.CS.CoreV1().Namespaces().Get(b.Context(), ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("namespace %s of the plain creates not gone after 5 minutes", ns.Name)
		}
	}
	rate := float64(count) / took.Seconds()
	b.Logf("API server alone: %d ConfigMaps created in %s by %d concurrent requests: %.0f creates/s", count, took.Round(time.Millisecond), workers, rate)
	return rate
}

// createAll creates the N clusters, workers at a time, recording when each
// create returned. A create that fails is retried (the webhook may be
// momentarily unreachable, the API server may shed load); retries counts
// those.
func (r *run) createAll() (start time.Time, took time.Duration, retries int64) {
	var retried atomic.Int64
	start = time.Now()
	parallel(r.b, r.n, func(i int) error {
		kd, name := r.cluster(i)
		var err error
		for attempt := range 10 {
			if attempt > 0 {
				retried.Add(1)
				time.Sleep(time.Second)
			}
			err = r.k.C.Create(r.b.Context(), kd.newObject(r.ns, name))
			if err == nil || apierrors.IsAlreadyExists(err) {
				r.t.setApplied(name, time.Now())
				return nil
			}
		}
		return fmt.Errorf("create %s: %w", name, err)
	})
	return start, time.Since(start), retried.Load()
}

// parallel calls do for 0..n-1, workers at a time, and fails the
// benchmark on the first error.
func parallel(b *testing.B, n int, do func(i int) error) {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration such as 2m", name, v)
	}
	return d
}
