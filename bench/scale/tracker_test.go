//go:build bench

package scale

import (
	"context"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

// tracker follows the benchmark's namespace through informers, so that
// waiting for a thousand clusters costs the API server one watch per
// kind, not a list per poll: when each cluster's StatefulSets appeared
// and became ready, which clusters, pods and claims still exist, and,
// while counting, the changes of the clusters and their children.
type tracker struct {
	kinds []kind
	// clusterKinds are the Kinds of the clusters and of their parts,
	// which prefix their changes.
	clusterKinds []string

	mu sync.Mutex
	// applied: when the create of each cluster returned.
	applied map[string]time.Time
	// setsAt and readyAt: when all a cluster's StatefulSets first existed,
	// and first were all ready.
	setsAt, readyAt map[string]time.Time
	// sets: each StatefulSet's owner and whether it is ready.
	sets map[string]setState
	// clusters, pods and claims present; for the pods and claims, when
	// each passed the stages that follow its StatefulSet (setSeen).
	clusters map[string]bool
	pods     map[string]*podState
	claims   map[string]*claimState
	setSeen  map[string]time.Time
	// changes counts, while counting, changes by what changed (e.g.
	// "ZookeeperCluster status", "StatefulSet"); examples keeps a few.
	counting bool
	// changed is when an object of a counted kind last changed, counting
	// or not: the idle window starts once that is settle ago.
	changed time.Time
	// trace names the cluster (SCALE_TRACE, the first of the run's by
	// default) whose every change, and its parts' and children's, the
	// tracker prints with what changed in their status: a cluster's
	// writes, one by one.
	trace    string
	changes  map[string]int
	examples []string
}

type setState struct {
	owner string
	ready bool
}

// podState is when the tracker first saw a pod, scheduled, and Ready; its
// StatefulSet and claims.
type podState struct {
	set                       string
	claims                    []string
	created, scheduled, ready time.Time
}

// claimState is when the tracker first saw a claim, and Bound.
type claimState struct {
	created, bound time.Time
}

// track starts informers on ns and returns once they have synced.
func track(b *testing.B, k *benchkube.Kube, kds []kind, ns string) *tracker {
	b.Helper()
	t := &tracker{kinds: kds, applied: map[string]time.Time{}, setsAt: map[string]time.Time{}, readyAt: map[string]time.Time{},
		sets: map[string]setState{}, clusters: map[string]bool{}, pods: map[string]*podState{}, claims: map[string]*claimState{},
		setSeen: map[string]time.Time{}, changes: map[string]int{}, trace: os.Getenv("SCALE_TRACE")}
	if t.trace == "" {
		t.trace = kds[0].short + "-0"
	}
	c, err := cache.New(k.Config, cache.Options{
		Scheme: k.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	// The informers' own log (watch restarts) is not the benchmark's.
	ctrllog.SetLogger(logr.Discard())
	handlers := map[client.Object]toolscache.ResourceEventHandlerFuncs{
		&appsv1.StatefulSet{}:           t.handler("StatefulSet", t.onStatefulSet),
		&corev1.Pod{}:                   t.handler("", t.onPod),
		&corev1.PersistentVolumeClaim{}: t.handler("", t.onClaim),
		&corev1.Service{}:               t.handler("Service", nil),
		&corev1.ConfigMap{}:             t.handler("ConfigMap", nil),
		&policyv1.PodDisruptionBudget{}: t.handler("PodDisruptionBudget", nil),
	}
	for _, kd := range kds {
		obj := kd.newObject("", "")
		t.clusterKinds = append(t.clusterKinds, kindName(k, obj))
		handlers[obj] = t.handler(kindName(k, obj), t.onCluster)
		for _, part := range kd.parts {
			t.clusterKinds = append(t.clusterKinds, kindName(k, part))
			handlers[part] = t.handler(kindName(k, part), nil)
		}
	}
	for obj, h := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			b.Fatal(err)
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			b.Error(err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the tracker's informers did not sync")
	}
	return t
}

func kindName(k *benchkube.Kube, obj client.Object) string {
	gvks, _, err := k.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", obj)
	}
	return gvks[0].Kind
}

// handler calls on (when not nil) with each object as it is now, or nil
// with its name when it is gone, and counts, while counting, the changes
// of the objects of kind (when not empty).
func (t *tracker) handler(kind string, on func(name string, obj client.Object)) toolscache.ResourceEventHandlerFuncs {
	apply := func(obj any, gone bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(client.Object)
		if !ok || on == nil {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if gone {
			on(o.GetName(), nil)
		} else {
			on(o.GetName(), o)
		}
	}
	// detail, what changed in the status, is computed only for a change
	// that is printed: every update of every object passes here.
	count := func(what, name string, detail func() string) {
		if kind == "" {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.changed = time.Now()
		if name == t.trace || strings.HasPrefix(name, t.trace+"-") {
			fmt.Printf("trace %s: %s %s%s\n", t.changed.Format("15:04:05.000"), what, name, detail())
		}
		if !t.counting {
			return
		}
		t.changes[what]++
		if len(t.examples) < 20 {
			t.examples = append(t.examples, what+" "+name+detail())
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			apply(obj, false)
			if o, ok := obj.(client.Object); ok {
				count(kind+" created", o.GetName(), noDetail)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			apply(newObj, false)
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync, not a change
			}
			what := kind + " spec"
			if o.GetGeneration() == n.GetGeneration() {
				what = kind + " status or metadata"
			}
			count(what, n.GetName(), func() string { return statusChange(o, n) })
		},
		DeleteFunc: func(obj any) {
			apply(obj, true)
			if o, ok := obj.(metav1.Object); ok {
				count(kind+" deleted", o.GetName(), noDetail)
			}
		},
	}
}

func (t *tracker) onCluster(name string, obj client.Object) {
	if obj == nil {
		delete(t.clusters, name)
		return
	}
	t.clusters[name] = true
}

func (t *tracker) onStatefulSet(name string, obj client.Object) {
	if obj == nil {
		owner := t.sets[name].owner
		delete(t.sets, name)
		t.update(owner)
		return
	}
	sts := obj.(*appsv1.StatefulSet)
	ref := metav1.GetControllerOf(sts)
	if ref == nil {
		return
	}
	owner := ""
	for _, kd := range t.kinds {
		if owner = kd.clusterOf(ref); owner != "" {
			break
		}
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	ready := sts.Status.ObservedGeneration >= sts.Generation && sts.Status.ReadyReplicas == replicas
	t.sets[name] = setState{owner: owner, ready: ready}
	if _, ok := t.setSeen[name]; !ok {
		t.setSeen[name] = time.Now()
	}
	t.update(owner)
}

// update records when owner's StatefulSets first all existed and first
// were all ready.
func (t *tracker) update(owner string) {
	if owner == "" {
		return
	}
	n, ready := 0, 0
	for _, s := range t.sets {
		if s.owner == owner {
			n++
			if s.ready {
				ready++
			}
		}
	}
	want := t.kindOf(owner).statefulSets
	now := time.Now()
	if _, ok := t.setsAt[owner]; !ok && n >= want {
		t.setsAt[owner] = now
	}
	if _, ok := t.readyAt[owner]; !ok && ready >= want {
		t.readyAt[owner] = now
	}
}

// kindOf returns the kind of the cluster named name, by its prefix.
func (t *tracker) kindOf(name string) kind {
	for _, kd := range t.kinds {
		if strings.HasPrefix(name, kd.short+"-") {
			return kd
		}
	}
	panic("no kind names " + name)
}

func (t *tracker) onPod(name string, obj client.Object) {
	if obj == nil {
		delete(t.pods, name)
		return
	}
	pod := obj.(*corev1.Pod)
	st := t.pods[name]
	now := time.Now()
	if st == nil {
		st = &podState{created: now}
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "StatefulSet" {
			st.set = ref.Name
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				st.claims = append(st.claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
		t.pods[name] = st
	}
	if st.scheduled.IsZero() && pod.Spec.NodeName != "" {
		st.scheduled = now
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && st.ready.IsZero() {
			st.ready = now
		}
	}
}

func (t *tracker) onClaim(name string, obj client.Object) {
	if obj == nil {
		delete(t.claims, name)
		return
	}
	st := t.claims[name]
	if st == nil {
		st = &claimState{created: time.Now()}
		t.claims[name] = st
	}
	if st.bound.IsZero() && obj.(*corev1.PersistentVolumeClaim).Status.Phase == corev1.ClaimBound {
		st.bound = time.Now()
	}
}

// stages returns, over the pods that are Ready, the time each spent in
// the stages between its StatefulSet and Ready: until the pod existed
// (the StatefulSet controller), until its claims were bound after that
// (the provisioner and the volume binder), until it was scheduled after
// both, and until kwok made it Ready. Each is sorted.
func (t *tracker) stages() (podCreated, claimsBound, scheduled, ready []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pods {
		seen, ok := t.setSeen[p.set]
		if p.ready.IsZero() || p.scheduled.IsZero() || !ok {
			continue
		}
		bound := p.created
		for _, c := range p.claims {
			if cl := t.claims[c]; cl != nil && cl.bound.After(bound) {
				bound = cl.bound
			}
		}
		podCreated = append(podCreated, max(p.created.Sub(seen), 0))
		claimsBound = append(claimsBound, bound.Sub(p.created))
		scheduled = append(scheduled, max(p.scheduled.Sub(bound), 0))
		ready = append(ready, max(p.ready.Sub(p.scheduled), 0))
	}
	for _, d := range [][]time.Duration{podCreated, claimsBound, scheduled, ready} {
		slices.Sort(d)
	}
	return podCreated, claimsBound, scheduled, ready
}

func (t *tracker) setApplied(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.applied[name] = at
}

// counts is a snapshot of what the tracker sees.
type counts struct {
	clusters, sets, ready, pods, podsReady, claims int
}

func (c counts) String() string {
	return fmt.Sprintf("%d clusters, %d with their StatefulSets, %d ready; %d pods (%d ready), %d claims",
		c.clusters, c.sets, c.ready, c.pods, c.podsReady, c.claims)
}

func (t *tracker) counts() counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := counts{clusters: len(t.clusters), pods: len(t.pods), claims: len(t.claims)}
	for name := range t.clusters {
		if _, ok := t.setsAt[name]; ok {
			c.sets++
		}
		if _, ok := t.readyAt[name]; ok {
			c.ready++
		}
	}
	for _, p := range t.pods {
		if !p.ready.IsZero() {
			c.podsReady++
		}
	}
	return c
}

// latencies returns, over the clusters, the time from each one's create
// to when its StatefulSets existed and to when they were ready, sorted.
func (t *tracker) latencies() (sets, ready []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, applied := range t.applied {
		if at, ok := t.setsAt[name]; ok {
			sets = append(sets, at.Sub(applied))
		}
		if at, ok := t.readyAt[name]; ok {
			ready = append(ready, at.Sub(applied))
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i] < sets[j] })
	sort.Slice(ready, func(i, j int) bool { return ready[i] < ready[j] })
	return sets, ready
}

// last returns the latest time in times.
func (t *tracker) last(times map[string]time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, at := range times {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// quiet waits until no counted object has changed for settle, at most
// for limit, and returns how long it waited: a cluster created last may
// still be settling (its servers' probes failing one after another) when
// every StatefulSet is ready.
func (t *tracker) quiet(settle, limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit {
		t.mu.Lock()
		since := time.Since(t.changed)
		t.mu.Unlock()
		if since >= settle {
			break
		}
		time.Sleep(min(settle-since, time.Second))
	}
	return time.Since(start)
}

func noDetail() string { return "" }

// statusChange says, for an example, which of the status's fields differ
// between two versions of an object, and how its conditions' messages
// changed; empty for objects without a status.
func statusChange(old, cur client.Object) string {
	o, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	n, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err1 != nil || err2 != nil {
		return ""
	}
	oldStatus, _ := o["status"].(map[string]any)
	newStatus, _ := n["status"].(map[string]any)
	var diffs []string
	for _, key := range slices.Sorted(maps.Keys(newStatus)) {
		if key == "conditions" || reflect.DeepEqual(oldStatus[key], newStatus[key]) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", key, short(oldStatus[key]), short(newStatus[key])))
	}
	conditions := func(status map[string]any) map[string]string {
		out := map[string]string{}
		list, _ := status["conditions"].([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				out[fmt.Sprint(m["type"])] = fmt.Sprintf("%v %v %q", m["status"], m["reason"], m["message"])
			}
		}
		return out
	}
	oc, nc := conditions(oldStatus), conditions(newStatus)
	for _, typ := range slices.Sorted(maps.Keys(nc)) {
		if oc[typ] != nc[typ] {
			diffs = append(diffs, fmt.Sprintf("%s: %.120s -> %.120s", typ, oc[typ], nc[typ]))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return " (" + strings.Join(diffs, "; ") + ")"
}

// short prints v (an unstructured value) in at most 120 characters.
func short(v any) string {
	text := fmt.Sprint(v)
	if len(text) > 120 {
		return text[:117] + "..."
	}
	return text
}

// count starts or stops counting changes; stopping returns them.
func (t *tracker) count(on bool) (map[string]int, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counting = on
	changes, examples := t.changes, t.examples
	if on {
		t.changes, t.examples = map[string]int{}, nil
	}
	return changes, examples
}

// waitFor polls done every second until it holds, logging the counts
// every 30 s; it fails the benchmark after timeout.
func (t *tracker) waitFor(b *testing.B, what string, timeout time.Duration, done func(counts) bool) time.Time {
	b.Helper()
	start := time.Now()
	lastLog := start
	for {
		c := t.counts()
		if done(c) {
			return time.Now()
		}
		if time.Since(start) > timeout {
			b.Fatalf("%s: not after %s: %s", what, timeout, c)
		}
		if time.Since(lastLog) >= 30*time.Second {
			// Progress, on stdout: a benchmark's log is printed at its end.
			fmt.Printf("%s: waiting %s for %s: %s\n", b.Name(), time.Since(start).Round(time.Second), what, c)
			lastLog = time.Now()
		}
		select {
		case <-b.Context().Done():
			b.Fatal(b.Context().Err())
		case <-time.After(time.Second):
		}
	}
}
