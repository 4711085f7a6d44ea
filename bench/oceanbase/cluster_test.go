//go:build bench

package oceanbase

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

const (
	// obsimImage is images/oceanbase-obsim's.
	obsimImage   = "localhost/obsim:1.0"
	rounds       = 3
	idleClusters = 4
	idleWindow   = time.Minute
)

// obsimFloor is the delay obsim adds to a step with its default knobs
// (internal/oceanbase/obsim/knobs.go): what no operator could go below.
// Steps not listed wait for nothing obsim delays.
var obsimFloor = map[string]time.Duration{
	"bootstrap/bootstrap-first-observers": 2 * time.Second, // BootstrapDelay
	// The observer scaled in joined after the bootstrap and holds no unit
	// (the sys tenant's are on each zone's first), so it has nothing to
	// migrate: obsim, like OceanBase, deletes it at once, and MigrateDelay,
	// which is per unit moved, does not apply.
	"scale-in/wait-servers-deleted": 0,
	"bootstrap/add-servers":         0,
	"bootstrap/create-users":        0,
	"bootstrap/set-parameters":      0,
	"scale-in/delete-servers":       0,
	"scale-in/remove-observers":     0,
}

type kube struct{ *benchkube.Kube }

func connect(b *testing.B) *kube { return &kube{benchkube.Connect(b, 50, 100, obv1.AddToScheme)} }

// BenchmarkCreate creates a 3-zone cluster rounds times; see the package
// documentation.
func BenchmarkCreate(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-ob", &obv1.OBCluster{})
	idle := k.IdleUsage(b, 20*time.Second)

	var total time.Duration
	var requests, writes float64
	steps := map[string][]time.Duration{}
	for b.Loop() {
		for i := range rounds {
			name := fmt.Sprintf("ob-%d", i)
			before := k.OperatorUsage(b)
			start := time.Now()
			tl := k.follow(b, ns, name)
			k.create(b, ns, name)
			readyAt := tl.waitReady(b, 5*time.Minute)
			used := k.OperatorUsage(b).Minus(before)
			share := idle.Over(time.Since(start))
			requests += used.Requests - share.Requests
			writes += used.Writes - share.Writes
			total += readyAt
			b.Logf("%s: Ready after %s; steps %s", name, readyAt.Round(10*time.Millisecond), tl.steps())
			tl.addTo(steps)

			k.scaleZ1(b, ns, name, 2)
			tl.waitActive(b, 4, 3*time.Minute)
			k.scaleZ1(b, ns, name, 1)
			tl.waitFlowDone(b, "scale-in", 3*time.Minute)
			b.Logf("%s: scaled z1 out and in; steps %s", name, tl.steps())
			tl.addTo(steps)
			tl.stop()
			k.delete(b, ns, name)
		}
	}
	n := float64(b.N * rounds)
	b.ReportMetric(total.Seconds()/n, "s-apply-to-ready")
	b.ReportMetric(requests/n, "api-requests/cluster")
	b.ReportMetric(writes/n, "api-writes/cluster")
	for _, s := range slices.Sorted(maps.Keys(steps)) {
		d := steps[s]
		med := median(d)
		floor := obsimFloor[s]
		b.Logf("step %-36s median %6s over %d runs (obsim's delay %s; above it %s)",
			s, med.Round(10*time.Millisecond), len(d), floor, (med - floor).Round(10*time.Millisecond))
		b.ReportMetric(med.Seconds(), "s-step-"+strings.ReplaceAll(s, "/", "-"))
	}
	b.Logf("idle operator baseline: %.0f requests/min (%.0f writes/min: leader election)", idle.Requests*60, idle.Writes*60)
}

// BenchmarkIdle creates idleClusters 3-zone clusters, waits until they are
// Ready and settled, then counts for idleWindow the changes to them and
// their children (any writer) and the operator's writes beyond leader
// election.
func BenchmarkIdle(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-ob-idle", &obv1.OBCluster{})
	for b.Loop() {
		names := make([]string, idleClusters)
		for i := range names {
			names[i] = fmt.Sprintf("idle-%d", i)
			k.create(b, ns, names[i])
		}
		benchkube.WaitAllReady(b, names, func(name string) bool { return k.ready(b, ns, name) }, 10*time.Minute)
		k.ReportIdle(b, ns, idleClusters, idleWindow,
			&appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.SecretList{}, &obv1.OBClusterList{})
		for _, name := range names {
			k.delete(b, ns, name)
		}
	}
}

func (k *kube) create(b *testing.B, ns, name string) {
	b.Helper()
	ob := &obv1.OBCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: obv1.OBClusterSpec{
			Image:           obsimImage,
			ImagePullPolicy: corev1.PullNever,
			Zones:           []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("100m")}},
			Storage: commonv1.StorageSpec{Size: ptr.To(resource.MustParse("64Mi")), ReclaimPolicy: commonv1.ReclaimDelete},
		},
	}
	if err := k.C.Create(b.Context(), ob); err != nil {
		b.Fatal(err)
	}
}

// scaleZ1 sets zone z1's observers.
func (k *kube) scaleZ1(b *testing.B, ns, name string, replicas int32) {
	b.Helper()
	ob := &obv1.OBCluster{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, ob); err != nil {
		b.Fatal(err)
	}
	patch := client.MergeFrom(ob.DeepCopy())
	ob.Spec.Zones[0].Replicas = replicas
	if err := k.C.Patch(b.Context(), ob, patch); err != nil {
		b.Fatal(err)
	}
}

// delete deletes the cluster and waits until it and its pods are gone.
func (k *kube) delete(b *testing.B, ns, name string) {
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k.C.Delete(b.Context(), ob); err != nil {
		b.Fatal(err)
	}
	for {
		var pods corev1.PodList
		err := k.C.List(b.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})
		if err == nil && len(pods.Items) == 0 && k.C.Get(b.Context(), client.ObjectKeyFromObject(ob), ob) != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kube) ready(b *testing.B, ns, name string) bool {
	ob := &obv1.OBCluster{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, ob); err != nil {
		return false
	}
	return isReady(ob)
}

func isReady(ob *obv1.OBCluster) bool {
	c := meta.FindStatusCondition(ob.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ob.Generation
}

// timeline follows one cluster through a watch and times, by when the
// watch delivered them, the steps of its task flows: a step runs from the
// status naming it as current to the status naming another step or
// finishing the flow. The API's timestamps have a one-second grain; the
// arrival times do not.
type timeline struct {
	start   time.Time
	events  chan *obv1.OBCluster
	w       watch.Interface
	last    *obv1.OBCluster
	current string    // flow/step now current
	since   time.Time // when it became current
	done    map[string][]time.Duration
	flows   map[string]int // finished flows, by name
}

func (k *kube) follow(b *testing.B, ns, name string) *timeline {
	b.Helper()
	w, err := k.C.Watch(b.Context(), &obv1.OBClusterList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": name})
	if err != nil {
		b.Fatal(err)
	}
	tl := &timeline{start: time.Now(), events: make(chan *obv1.OBCluster, 64), w: w,
		done: map[string][]time.Duration{}, flows: map[string]int{}}
	go func() {
		defer close(tl.events)
		for e := range w.ResultChan() {
			if ob, ok := e.Object.(*obv1.OBCluster); ok && e.Type != watch.Deleted {
				tl.events <- ob
			}
		}
	}()
	return tl
}

func (tl *timeline) stop() { tl.w.Stop() }

// observe records ob, received at now.
func (tl *timeline) observe(ob *obv1.OBCluster, now time.Time) {
	tl.last = ob
	op := ob.Status.Operation
	cur := ""
	if op != nil && op.Phase.Active() {
		cur = op.Name + "/" + op.Step
	}
	if cur == tl.current {
		return
	}
	if tl.current != "" {
		tl.done[tl.current] = append(tl.done[tl.current], now.Sub(tl.since))
	}
	if cur == "" && op != nil {
		tl.flows[op.Name]++
	}
	tl.current, tl.since = cur, now
}

// until receives changes until cond holds or timeout passes, and returns
// how long after the timeline's start cond first held.
func (tl *timeline) until(b *testing.B, what string, timeout time.Duration, cond func(*obv1.OBCluster) bool) time.Duration {
	b.Helper()
	deadline := time.After(timeout)
	for {
		if tl.last != nil && cond(tl.last) {
			return time.Since(tl.start)
		}
		select {
		case ob, ok := <-tl.events:
			if !ok {
				b.Fatalf("the watch of the cluster ended while waiting for %s", what)
			}
			tl.observe(ob, time.Now())
		case <-deadline:
			b.Fatalf("not %s after %s; last status: %+v", what, timeout, tl.last.Status)
		}
	}
}

func (tl *timeline) waitReady(b *testing.B, timeout time.Duration) time.Duration {
	return tl.until(b, "Ready", timeout, isReady)
}

func (tl *timeline) waitActive(b *testing.B, servers int32, timeout time.Duration) {
	tl.until(b, fmt.Sprintf("%d servers active", servers), timeout, func(ob *obv1.OBCluster) bool {
		return ob.Status.ActiveServers == servers && isReady(ob)
	})
}

// waitFlowDone waits until flow has finished once more than when called,
// and the cluster is Ready.
func (tl *timeline) waitFlowDone(b *testing.B, flow string, timeout time.Duration) {
	n := tl.flows[flow]
	tl.until(b, flow+" done", timeout, func(ob *obv1.OBCluster) bool { return tl.flows[flow] > n && isReady(ob) })
}

// steps describes the steps timed since the last addTo.
func (tl *timeline) steps() string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(tl.done)) {
		for _, d := range tl.done[s] {
			parts = append(parts, fmt.Sprintf("%s=%s", s, d.Round(10*time.Millisecond)))
		}
	}
	return strings.Join(parts, " ")
}

// addTo moves the steps timed so far into all.
func (tl *timeline) addTo(all map[string][]time.Duration) {
	for s, d := range tl.done {
		all[s] = append(all[s], d...)
	}
	tl.done = map[string][]time.Duration{}
}

func median(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[len(s)/2]
}
