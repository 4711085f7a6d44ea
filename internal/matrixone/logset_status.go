package matrixone

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// RestartSettle is how long a restarted log store's pod must have been
// ready before the next store restarts: its port accepts before its shard
// replicas have caught up, and HAKeeper may still count it up from
// heartbeats it sent before it stopped.
const RestartSettle = 10 * time.Second

// logState is what a pass observed of a log set.
type logState struct {
	// ns and name are the set's.
	ns, name string
	// sts is the StatefulSet as applied.
	sts *appsv1.StatefulSet
	// pods are the stores' pods by ordinal, terminating ones left out;
	// allPods has those too.
	pods, allPods map[int]*corev1.Pod
	// view is the freshest of the probes' answers younger than
	// MaxViewAge, answered at viewAt; viewOK is false when there is none,
	// and viewErr then says what each probe said.
	view    hakeeper.View
	viewAt  time.Time
	viewOK  bool
	viewErr string
	now     time.Time
	// stores is the stores ConfigMap's data: the UUIDs of replaced stores
	// by pod.
	stores map[string]string
	// replace is the failed store to replace in this pass, if any.
	replace *downStore
	// shared is the shared storage's location while the set restores
	// (restoring): nothing else is observed then.
	shared *mov1.S3Storage
}

// observe reads the stores' pods and HAKeeper's view from their probes
// (viewReader.read: waiting for fresh answers only while a flow runs).
func (c *LogSetController) observe(ctx *LogContext, sts *appsv1.StatefulSet, stores map[string]string) (*logState, error) {
	l := ctx.Obj
	pods, err := logSet(l).Pods(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	st := &logState{ns: l.Namespace, name: l.Name, sts: sts, pods: map[int]*corev1.Pod{}, allPods: pods, now: time.Now(), stores: stores}
	for ordinal, p := range pods {
		if p.DeletionTimestamp.IsZero() {
			st.pods[ordinal] = p
		}
	}
	read := c.views.read(ctx, groupOf(l), c.trigger, groupOf(l), pods, ctx.Operation().Running())
	st.view, st.viewAt, st.viewOK, st.viewErr = read.view, read.at, read.ok, read.why
	return st, nil
}

// storeID is the UUID of the store of pod: a replacement's, or the one of
// the pod's name.
func (st *logState) storeID(pod string) string {
	if uuid := st.stores[pod]; uuid != "" {
		return uuid
	}
	return wire.StoreID(st.ns, pod)
}

// podName is the name of the set's pod at ordinal.
func (st *logState) podName(ordinal int) string { return fmt.Sprintf("%s-%d", st.name, ordinal) }

// storeState is how HAKeeper sees the store of pod.
func (st *logState) storeState(pod string) mov1.StoreState {
	if !st.viewOK {
		return mov1.StoreUnknown
	}
	s, ok := st.view.LogStore(st.storeID(pod))
	switch {
	case !ok:
		return mov1.StoreUnknown
	case s.State == wire.StoreUp:
		return mov1.StoreUp
	case s.State == wire.StoreDown:
		return mov1.StoreDown
	}
	return mov1.StoreUnknown
}

// setStatus writes the stores, the shards, HAKeeper's state and the ready
// replicas into l's status.
func (st *logState) setStatus(l *LogSet) {
	ready := 0
	for _, p := range st.pods {
		if workload.IsReady(p) {
			ready++
		}
	}
	l.Status.ReadyReplicas = int32(ready)
	l.Status.HAKeeper = ""
	pods := map[string]string{} // store UUID → pod
	l.Status.Stores = nil
	for i := range st.storeCount(l) {
		pod := build.LogPodName(l, i)
		pods[st.storeID(pod)] = pod
		s := mov1.LogStoreStatus{Pod: pod, UUID: st.storeID(pod), State: shownState(st.pods[i], st.storeState(pod))}
		if v, ok := st.view.LogStore(s.UUID); ok && st.viewOK {
			s.Replicas = int32(len(v.Replicas))
		}
		l.Status.Stores = append(l.Status.Stores, s)
	}
	l.Status.Shards = nil
	if !st.viewOK {
		return
	}
	l.Status.HAKeeper = st.view.State
	for _, sh := range st.view.LogShards {
		l.Status.Shards = append(l.Status.Shards, mov1.LogShardStatus{ShardID: int64(sh.ShardID),
			Leader: pods[sh.Replicas[sh.LeaderID]], Replicas: int32(st.runningReplicas(sh)),
			Of: int32(sh.NumberOfReplicas), Term: int64(sh.Term)})
	}
	slices.SortFunc(l.Status.Shards, func(a, b mov1.LogShardStatus) int { return cmp.Compare(a.ShardID, b.ShardID) })
}

// shownState is the state status shows for a store whose pod is pod (nil
// when it does not exist) and whose state to HAKeeper is reported: Down
// while its pod is gone or not ready, whatever HAKeeper says (it counts a
// store up until the store's heartbeat timeout, minutes after it stopped);
// else HAKeeper's. Decisions that need HAKeeper's own word (a store it no
// longer hears from may be replaced) read HAKeeper's.
func shownState(pod *corev1.Pod, reported mov1.StoreState) mov1.StoreState {
	if pod == nil || !workload.IsReady(pod) {
		return mov1.StoreDown
	}
	return reported
}

// notServing says why HAKeeper and the log shards do not serve; empty when
// they do (HAKeeper running, every shard led).
func (st *logState) notServing() (reason, message string) {
	switch {
	case !st.viewOK:
		return mov1.ReasonHAKeeperUnreachable, "no view of HAKeeper: " + st.viewErr
	case !st.view.Running():
		return mov1.ReasonBootstrapping, "HAKeeper is " + st.view.State
	case len(st.view.LeaderlessShards()) > 0:
		return commonv1.ReasonNoLeader, fmt.Sprintf("log shards %v have no leader", st.view.LeaderlessShards())
	}
	return "", ""
}

// notReady says why the set is not Ready; empty when it is: every store's
// pod ready on the latest revision, HAKeeper running, every shard led and
// every store up.
func (st *logState) notReady(l *LogSet) (reason, message string) {
	for i := range st.storeCount(l) {
		p, ok := st.pods[i]
		switch {
		case !ok:
			return mov1.ReasonStoresDown, build.LogPodName(l, i) + " does not exist"
		case !workload.IsReady(p):
			return mov1.ReasonStoresDown, p.Name + " is not ready"
		}
	}
	if reason, message := st.notServing(); reason != "" {
		return reason, message
	}
	for i := range st.storeCount(l) {
		pod := build.LogPodName(l, i)
		if s := st.storeState(pod); s != mov1.StoreUp {
			return mov1.ReasonStoresDown, fmt.Sprintf("the store of %s is %s to HAKeeper", pod, s)
		}
	}
	if scaling := st.scalingIn(l); scaling != "" {
		return commonv1.ReasonScaling, scaling
	}
	if under := st.underReplicated(); under != "" {
		return mov1.ReasonReplicasMissing, under
	}
	if why := revisionPending(st.sts); why != "" {
		return commonv1.ReasonRestarting, why
	}
	if stale := st.stale(); len(stale) > 0 {
		return commonv1.ReasonRestarting, fmt.Sprintf("%d stores to restart onto revision %s, next %s",
			len(stale), st.sts.Status.UpdateRevision, stale[0].Name)
	}
	return "", ""
}

// setConditions sets Available (HAKeeper runs and every shard has a
// leader), StoresHealthy, Progressing and Ready, and returns the store to
// replace now, if any.
func (st *logState) setConditions(ctx *LogContext) *downStore {
	l := ctx.Obj
	reason, message, replace := st.storesHealth(l)
	healthy := metav1.ConditionFalse
	if reason == mov1.ReasonAllStoresUp {
		healthy = metav1.ConditionTrue
	}
	ctx.SetCondition(mov1.ConditionStoresHealthy, healthy, reason, message)
	st.setServing(ctx)
	return replace
}

// setServing sets Available, Progressing and Ready.
func (st *logState) setServing(ctx *LogContext) {
	l := ctx.Obj
	if reason, message := st.notServing(); reason != "" {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, reason, message)
	} else {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionTrue, mov1.ReasonShardsLed,
			fmt.Sprintf("HAKeeper running, %d log shards led", len(st.view.LogShards)))
	}
	reason, message := st.notReady(l)
	if reason != "" && reason != commonv1.ReasonRestarting && neverReady(l) {
		reason = commonv1.ReasonCreating
	}
	if reason == "" {
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, commonv1.ReasonStable, "")
		ctx.SetReady(true, "", fmt.Sprintf("%d log stores up, HAKeeper running", l.Spec.Replicas))
		return
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
}

// neverReady reports whether the object has never been Ready.
func neverReady(obj framework.Object) bool {
	c := meta.FindStatusCondition(obj.StatusCore().Conditions, framework.ConditionReady)
	return c == nil || c.Status != metav1.ConditionTrue && c.Reason == commonv1.ReasonCreating
}

// stale returns the pods that run an older revision of the pod template
// than the StatefulSet's latest, in the order they restart: stores that
// lead no shard first (a leader's restart costs an election), then by
// ordinal. None while the StatefulSet controller has not yet computed the
// latest revision.
func (st *logState) stale() []*corev1.Pod {
	if !workload.RevisionKnown(st.sts) {
		return nil
	}
	leads := map[string]int{}
	if st.viewOK {
		for _, sh := range st.view.LogShards {
			leads[sh.Replicas[sh.LeaderID]]++
		}
	}
	var out []*corev1.Pod
	for _, ordinal := range slices.Sorted(maps.Keys(st.pods)) {
		if p := st.pods[ordinal]; p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.sts.Status.UpdateRevision {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Compare(leads[st.storeID(a.Name)], leads[st.storeID(b.Name)])
	})
	return out
}

// restartBlocked says why restarting pod's store now would not be safe;
// empty when it is: every store's pod ready (the last restarted one for
// RestartSettle), HAKeeper running, every shard led, every store up, and
// every shard keeping a majority of its replicas up without this store. A
// set whose shards have one replica has no majority to keep: its restart
// stops the log service for a moment, which its user chose.
func (st *logState) restartBlocked(l *LogSet, pod *corev1.Pod) string {
	if why := st.othersSettled(l, -1); why != "" {
		return why
	}
	if l.Spec.ShardReplicas > 1 {
		if reasons := st.view.MajorityKeptWithout(st.storeID(pod.Name)); len(reasons) > 0 {
			return strings.Join(reasons, "; ")
		}
	}
	return ""
}
