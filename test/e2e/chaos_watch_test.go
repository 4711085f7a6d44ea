//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/stewardhq/steward/test/chaos"
)

// chaosQuietFor is how long a settled system's Steward objects are watched
// for a write: nothing happens to the cluster then, so the operator has
// nothing to write (the probes go on, and their unchanged answers must
// not reach the status).
const chaosQuietFor = 15 * time.Second

// quietSpec names a system's objects for the "no status written while
// nothing changed" invariant: every kind of the system's API group in the
// namespace, less the fields that follow the client's workload by design
// (a ZooKeeper server's last zxid, GPSS's job counts), which change while
// the cluster does not.
type quietSpec struct {
	ns       string
	gv       schema.GroupVersion
	workload []string // chaos.Changes patterns

	// dyn and kinds are found once per run (prepare).
	dyn   dynamic.Interface
	kinds []schema.GroupVersionResource
}

// prepare makes the client and discovers the group's kinds, once.
func (q *quietSpec) prepare() error {
	if q.dyn != nil {
		return nil
	}
	dyn, err := dynamic.NewForConfig(env.config)
	if err != nil {
		return err
	}
	kinds, err := q.resources()
	if err != nil {
		return err
	}
	q.dyn, q.kinds = dyn, kinds
	return nil
}

// heldQuiet runs during (the step's other invariants) and waits out
// chaosQuietFor, watching the objects from before it, and says which
// object changed, and where, if one did.
func (q *quietSpec) heldQuiet(ctx context.Context, during func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := q.prepare(); err != nil {
		return err
	}
	dyn, resources := q.dyn, q.kinds
	var (
		mu      sync.Mutex
		changes []string
		wg      sync.WaitGroup
	)
	deadline := time.Now().Add(chaosQuietFor)
	for _, gvr := range resources {
		list, err := dyn.Resource(gvr).Namespace(q.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		last := map[string]map[string]any{}
		for _, o := range list.Items {
			last[o.GetName()] = o.Object
		}
		wg.Go(func() {
			found := q.watchChanges(ctx, dyn.Resource(gvr).Namespace(q.ns), list.GetResourceVersion(), deadline, last)
			mu.Lock()
			changes = append(changes, found...)
			mu.Unlock()
		})
	}
	err := during(ctx)
	if wait := time.Until(deadline); err == nil && wait > 0 {
		sleep(ctx, wait)
	}
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		slices.Sort(changes)
		return fmt.Errorf("written while nothing changed (%s after the system settled): %s", chaosQuietFor, strings.Join(changes, "; "))
	}
	return nil
}

// resources are the namespaced kinds of the group the API server serves.
func (q quietSpec) resources() ([]schema.GroupVersionResource, error) {
	gv := q.gv
	list, err := env.client.Discovery().ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", gv, err)
	}
	var out []schema.GroupVersionResource
	for _, r := range list.APIResources {
		if r.Namespaced && !strings.Contains(r.Name, "/") {
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, nil
}

// watchChanges watches one kind from rv until deadline and describes every
// change to its objects but the workload's, against last (each object's
// version as listed). A watch the API server ends early is started again
// from the last version seen.
func (q quietSpec) watchChanges(ctx context.Context, ri dynamic.ResourceInterface, rv string, deadline time.Time, last map[string]map[string]any) []string {
	var out []string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		timeout := int64(time.Until(deadline).Seconds()) + 1
		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
		if err != nil {
			// The API server may be restarting (another system's fault,
			// when systems run at once): watch again from rv, which
			// replays what happened meanwhile.
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				// An error ends the watch (the window's end cancels it, an
				// API server restart breaks it); a version too old to
				// watch from is one whose changes cannot be seen.
				if ev.Type == watch.Error && apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) && time.Now().Before(deadline) {
					// Too old to watch from: the objects as they are now
					// show what changed meanwhile.
					list, err := ri.List(ctx, metav1.ListOptions{})
					if err != nil {
						continue
					}
					for _, o := range list.Items {
						out = append(out, q.changed(&o, last)...)
					}
					rv = list.GetResourceVersion()
				}
				continue
			}
			rv = o.GetResourceVersion()
			if ev.Type == watch.Bookmark || time.Now().After(deadline) {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Deleted:
				out = append(out, fmt.Sprintf("%s/%s %s", strings.ToLower(o.GetKind()), o.GetName(), strings.ToLower(string(ev.Type))))
				last[o.GetName()] = o.Object
			case watch.Modified:
				out = append(out, q.changed(o, last)...)
			}
		}
		w.Stop()
	}
	return out
}

// changed describes how o differs from its version in last, but for the
// workload's fields, and records it there.
func (q quietSpec) changed(o *unstructured.Unstructured, last map[string]map[string]any) []string {
	before, ok := last[o.GetName()]
	last[o.GetName()] = o.Object
	what := fmt.Sprintf("%s/%s", strings.ToLower(o.GetKind()), o.GetName())
	if !ok {
		return []string{what + " added"}
	}
	changed := chaos.Changes(before, o.Object, append([]string{"metadata.resourceVersion", "metadata.managedFields"}, q.workload...)...)
	if len(changed) == 0 {
		return nil
	}
	var out []string
	for _, path := range changed[:min(len(changed), 8)] {
		out = append(out, fmt.Sprintf("%s %.80q → %.80q", path, fmt.Sprint(valueAt(before, path)), fmt.Sprint(valueAt(o.Object, path))))
	}
	return []string{fmt.Sprintf("%s at %s (%s)", what, strings.Join(out, ", "), time.Now().Format(time.TimeOnly))}
}

// valueAt is the value at a dotted path of chaos.Changes in obj; nil
// where there is none.
func valueAt(obj any, path string) any {
	for _, key := range strings.Split(path, ".") {
		switch o := obj.(type) {
		case map[string]any:
			obj = o[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(o) {
				return nil
			}
			obj = o[i]
		default:
			return nil
		}
	}
	return obj
}

// suiteDeletions are the pods the suite's faults deleted, by namespace and
// name, with when: their deletions are the suite's, not the operator's.
var suiteDeletions = struct {
	sync.Mutex
	at map[string]time.Time
}{at: map[string]time.Time{}}

func noteSuiteDeletion(ns, pod string) {
	suiteDeletions.Lock()
	defer suiteDeletions.Unlock()
	suiteDeletions.at[ns+"/"+pod] = time.Now()
}

// deletedBySuite reports whether the suite deleted the pod in the last
// minute.
func deletedBySuite(ns, pod string) bool {
	suiteDeletions.Lock()
	defer suiteDeletions.Unlock()
	at, ok := suiteDeletions.at[ns+"/"+pod]
	return ok && time.Since(at) < time.Minute
}

// quorumWatch is the "no member removed while it was needed for quorum"
// invariant, held for a whole run: it watches a quorum system's member
// pods, and when one that served goes (its deletion begun, or gone at
// once) for a reason other than the suite's faults, the members that
// serve besides it must still be a majority of the voting members. A
// member is serving when its pod is Ready; voters says which pods vote
// at that moment (nil: the cluster is being deleted, when nothing is
// needed).
type quorumWatch struct {
	ns, selector string
	voters       func(ctx context.Context) ([]string, error)

	mu         sync.Mutex
	violations []string
	checked    int
	stop       context.CancelFunc
	done       chan struct{}
}

// startQuorumWatch starts watching until stop.
func startQuorumWatch(ns, selector string, voters func(ctx context.Context) ([]string, error)) *quorumWatch {
	ctx, cancel := context.WithCancel(context.Background())
	q := &quorumWatch{ns: ns, selector: selector, voters: voters, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(q.done)
		q.run(ctx)
	}()
	return q
}

// run watches the pods, listing them again whenever a watch ends (an API
// server restart ends it; a deletion while no watch ran goes unseen).
func (q *quorumWatch) run(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := env.client.CoreV1().Pods(q.ns).List(ctx, metav1.ListOptions{LabelSelector: q.selector})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		pods := map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		w, err := env.client.CoreV1().Pods(q.ns).Watch(ctx, metav1.ListOptions{LabelSelector: q.selector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			before := pods[p.Name]
			switch {
			case ev.Type == watch.Deleted:
				delete(pods, p.Name)
				if before != nil && before.UID == p.UID && before.DeletionTimestamp == nil {
					q.went(ctx, before, pods)
				}
			case p.DeletionTimestamp != nil && (before == nil || before.UID != p.UID || before.DeletionTimestamp == nil):
				pods[p.Name] = p
				q.went(ctx, p, pods)
			default:
				pods[p.Name] = p
			}
		}
		w.Stop()
	}
}

// went checks the quorum once gone, a pod that was serving, goes.
func (q *quorumWatch) went(ctx context.Context, gone *corev1.Pod, pods map[string]*corev1.Pod) {
	if !podReady(gone) || deletedBySuite(q.ns, gone.Name) {
		return
	}
	voters, err := q.voters(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.checked++
	switch {
	case err != nil:
		q.violations = append(q.violations, fmt.Sprintf("%s went and its voting members could not be read: %v", gone.Name, err))
		return
	case voters == nil || !slices.Contains(voters, gone.Name):
		return
	}
	var serving []string
	for _, v := range voters {
		if p := pods[v]; v != gone.Name && p != nil && p.DeletionTimestamp == nil && podReady(p) {
			serving = append(serving, v)
		}
	}
	if len(serving) < len(voters)/2+1 {
		q.violations = append(q.violations, fmt.Sprintf("%s went at %s while it was needed for quorum: of the voting members %v only %v served besides it",
			gone.Name, time.Now().Format(time.TimeOnly), voters, serving))
	}
}

// err is the violations so far, if any.
func (q *quorumWatch) err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.violations) > 0 {
		return errors.New(strings.Join(q.violations, "; "))
	}
	return nil
}

// close stops the watch and says how many departures it checked.
func (q *quorumWatch) close() int {
	q.stop()
	<-q.done
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.checked
}
