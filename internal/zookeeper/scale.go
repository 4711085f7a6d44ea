package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// The scale flow and its steps.
const (
	flowScale         = "scale"
	stepChangeMembers = "change-members"
	stepResize        = "resize-statefulset"
)

// scaleFlow changes the ensemble's size to spec.replicas in two steps:
// change-members adds or removes one member per reconfiguration until the
// membership is servers 1..replicas; resize-statefulset then sizes the
// StatefulSet to match and, under reclaim policy Delete, deletes the
// volumes of the departed members once their pods are gone.
//
// A joining server's pod starts before the server becomes a member: it
// comes up with the committed membership plus itself, follows the leader
// without a vote, and is added once it serves; members leave the ensemble
// before their pods go, and only while the remaining members keep a
// quorum. Both steps target the current spec.replicas, so a change of
// replicas during the flow redirects it instead of racing it.
//
// The steps say what size the StatefulSet has by holding it
// (status.operation.held): change-members grows it for the joining
// server, resize-statefulset sets it to spec.replicas. Declare sizes the
// StatefulSet from the hold and the membership only (desiredServers); it
// never asks which step runs.
func (c *Controller) scaleFlow() framework.Flow[*Cluster, *ensemble] {
	return framework.Flow[*Cluster, *ensemble]{
		Name: flowScale,
		Steps: []framework.Step[*Cluster, *ensemble]{
			// Bounds of whole steps: a scale from 1 to 15 adds 14 servers.
			{Name: stepChangeMembers, Run: c.changeMembers, Timeout: time.Hour},
			{Name: stepResize, Run: c.resizeStatefulSet, Timeout: 15 * time.Minute},
		},
		MaxAttempts: 8,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: 30 * time.Second},
	}
}

// nextMemberChange returns the one reconfiguration that moves members
// towards servers 1..want: while the ensemble is smaller than wanted, the
// lowest missing id joins; otherwise the highest id beyond want leaves
// first (a scale-in removes the newest servers), unless no member is in
// 1..want: then one joins first, so that the last member never leaves.
// Both are zero when members are exactly 1..want.
func nextMemberChange(members []int, want int) (add, remove int) {
	var missing, extra []int
	for id := 1; id <= want; id++ {
		if !slices.Contains(members, id) {
			missing = append(missing, id)
		}
	}
	for _, id := range members {
		if id < 1 || id > want {
			extra = append(extra, id)
		}
	}
	switch {
	case len(missing) > 0 && (len(members) < want || len(extra) == len(members)):
		return slices.Min(missing), 0
	case len(extra) > 0:
		return 0, slices.Max(extra)
	}
	return 0, 0
}

// changeMembers makes one membership change per run, reading the committed
// membership from the ensemble each time, so that a run repeated after the
// operator restarted does not change it twice. Declare has started the
// joining server's pod in the same pass, from the same membership.
//
// Before anything else it holds the StatefulSet large enough for the
// server that joins next by the membership Declare observed, as Declare
// will apply it in the next pass: the joiner's pod must run, and serve,
// before it is added, and this needs no server to answer.
func (c *Controller) changeMembers(ctx *Context, e *ensemble) (bool, error) {
	zk := ctx.Obj
	if add, _ := nextMemberChange(e.members, int(zk.Spec.Replicas)); add != 0 {
		holdServers(ctx, e, int32(build.Ordinal(add)+1))
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.ReconfigTimeout)
	defer cancel()
	cfg, session, err := c.members(rctx, ctx, e)
	if err != nil || session == nil {
		return false, err
	}
	ids := cfg.IDs()
	c.reportLostReply(ctx, cfg)
	if !slices.Equal(ids, e.members) {
		// The leader's voting view (or, without a leader, status) lags
		// the configuration just read: what Declare applied may be a step
		// behind. Status takes the committed membership, so that the next
		// pass's Declare agrees even if no leader answers then.
		ctx.Obj.Status.Members = toInt32(ids)
		return c.wait(ctx, commonv1.ReasonScaling, fmt.Sprintf("members %v committed, the leader's view still says %v", ids, e.members))
	}
	add, remove := nextMemberChange(ids, int(zk.Spec.Replicas))
	switch {
	case add != 0:
		if s := e.member(add); s == nil || !s.serving() {
			return c.wait(ctx, commonv1.ReasonScaling, fmt.Sprintf("waiting for server %d to start and follow the leader before it joins", add))
		}
		change := memberChange{add: add, from: cfg.Version}
		c.sending(zk, change)
		next, err := zkclient.AddMember(rctx, session.addrs, build.Members(zk, []int{add}, c.opts.ClusterDomain)[0], cfg.Version, session.auth)
		if err != nil {
			return c.reconfigFailed(ctx, fmt.Errorf("add server %d: %w", add, err))
		}
		reason, message := change.event()
		c.committed(ctx, e, cfg, next, reason, message)
		return false, nil
	case remove != 0:
		remaining := slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id == remove })
		if n := e.servingMembers(remaining); n < quorum(len(remaining)) {
			return c.wait(ctx, commonv1.ReasonQuorumAtRisk, fmt.Sprintf(
				"not removing server %d: %d of the remaining %d members serve, a quorum needs %d", remove, n, len(remaining), quorum(len(remaining))))
		}
		change := memberChange{remove: remove, from: cfg.Version}
		c.sending(zk, change)
		next, err := zkclient.RemoveMember(rctx, session.addrs, remove, cfg.Version, session.auth)
		if err != nil {
			return c.reconfigFailed(ctx, fmt.Errorf("remove server %d: %w", remove, err))
		}
		reason, message := change.event()
		c.committed(ctx, e, cfg, next, reason, message)
		return false, nil
	}
	return true, nil
}

// memberChange is a reconfiguration sent to the ensemble: the server added
// or removed, and the configuration version it was made from.
type memberChange struct {
	add, remove int
	from        int64
}

// event returns the Event reason and message of the change.
func (m memberChange) event() (reason, message string) {
	if m.add != 0 {
		return zkv1.EventMemberAdded, fmt.Sprintf("Server %d joined the ensemble", m.add)
	}
	return zkv1.EventMemberRemoved, fmt.Sprintf("Server %d left the ensemble", m.remove)
}

// madeBy reports whether cfg is what sent led to: a newer configuration
// than the one it was made from, with the added server in it or the
// removed one out of it.
func (m memberChange) madeBy(cfg zkclient.Config) bool {
	if cfg.Version == m.from {
		return false
	}
	_, has := cfg.Members[m.add+m.remove]
	return has == (m.add != 0)
}

// sending records the change about to be sent for zk until a later run
// reads the outcome: when the answer is lost (the removed leader closes
// the connection before it answers), the change may have been made all
// the same, and it is still reported once.
func (c *Controller) sending(zk *Cluster, m memberChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[zk.UID] = m
}

// reportLostReply records the Event of a change whose answer was lost and
// that cfg, the configuration read since, shows made. The record of the
// change goes either way. A change that was answered was reported by
// committed already.
func (c *Controller) reportLostReply(ctx *Context, cfg zkclient.Config) {
	c.mu.Lock()
	m, ok := c.sent[ctx.Obj.UID]
	delete(c.sent, ctx.Obj.UID)
	c.mu.Unlock()
	if !ok || !m.madeBy(cfg) {
		return
	}
	reason, message := m.event()
	ctx.Log.Info("Ensemble reconfigured; the answer was lost", "members", cfg.IDs(), "version", fmt.Sprintf("%#x", cfg.Version))
	ctx.Event(corev1.EventTypeNormal, reason, "%s; members %v (configuration version %#x; the answer to the change was lost)",
		message, cfg.IDs(), cfg.Version)
}

// reconfigFailed turns the answers ZooKeeper gives while it is busy into a
// wait, and anything else into a failed attempt of the step.
func (c *Controller) reconfigFailed(ctx *Context, err error) (bool, error) {
	if reconfigBusy(err) {
		return c.wait(ctx, commonv1.ReasonScaling, err.Error()+"; trying again")
	}
	return false, err
}

// reconfigBusy reports whether a reconfiguration failed only because the
// ensemble was busy: another reconfiguration in flight, the new
// configuration's quorum not yet connected and synced, or the configuration
// changed since it was read. The next run reads it again and retries.
func reconfigBusy(err error) bool {
	return errors.Is(err, zkclient.ErrNoQuorum) || errors.Is(err, zkclient.ErrReconfigInProgress) ||
		errors.Is(err, zkclient.ErrStaleVersion)
}

// session is how to reach the ensemble through its client port.
type session struct {
	addrs []string
	auth  zkclient.Option
}

// members reads the committed membership through the serving servers, as
// the super user (a session, so only while a flow changes membership; the
// passes in between read the AdminServers' voting views). A nil session
// and nil error mean that no server serves: the step waits.
func (c *Controller) members(rctx context.Context, ctx *Context, e *ensemble) (zkclient.Config, *session, error) {
	password, err := c.credentials(ctx)
	if err != nil {
		return zkclient.Config{}, nil, err
	}
	s := &session{addrs: e.clientAddresses(), auth: zkclient.WithSuperUser(password)}
	if len(s.addrs) == 0 {
		_, err := c.wait(ctx, commonv1.ReasonNoQuorum, "no server serves; waiting for the ensemble before changing its membership")
		return zkclient.Config{}, nil, err
	}
	cfg, err := zkclient.Members(rctx, s.addrs, s.auth)
	if err != nil {
		return zkclient.Config{}, nil, fmt.Errorf("read the members: %w", err)
	}
	return cfg, s, nil
}

// committed records a reconfiguration: the members ConfigMap and status
// follow at once (no joining server left in it), and an Event says what
// changed, only when it did (a repeated run finds its change done and says
// nothing).
func (c *Controller) committed(ctx *Context, e *ensemble, before, after zkclient.Config, reason, message string) {
	c.mu.Lock()
	delete(c.sent, ctx.Obj.UID)
	c.mu.Unlock()
	ids := after.IDs()
	ctx.Obj.Status.Members = toInt32(ids)
	// The voting views heard before the change are stale now.
	c.membersCommitted(ctx.Obj, e, ids)
	if after.Version != before.Version {
		ctx.Log.Info("Ensemble reconfigured", "members", ids, "version", fmt.Sprintf("%#x", after.Version))
		ctx.Event(corev1.EventTypeNormal, reason, "%s; members %v (configuration version %#x)", message, ids, after.Version)
	}
	if err := c.applyMembers(ctx, ids, 0); err != nil {
		// The next pass applies it again; membership is committed already.
		ctx.Log.Error(err, "Writing the members ConfigMap after a reconfiguration")
	}
	if err := c.markDeparted(ctx, ids); err != nil {
		ctx.Log.Error(err, "Marking the volumes of departed members")
	}
}

// DepartedLabel marks the volume claim of a server that has left the
// ensemble: its data stopped at its departure. A cluster bootstrapped
// again (re-created under reclaim policy Retain) does not start such a
// server as a voter, which could elect a leader without the newest
// transactions; it joins through the scale flow, syncing from the leader
// first.
const DepartedLabel = "zookeeper.steward.dev/departed"

// markDeparted labels the claims of servers that are not in members as
// departed, and unlabels those of members. It runs after every committed
// reconfiguration and when a scale flow ends, so that a missed update is
// repaired.
func (c *Controller) markDeparted(ctx *Context, members []int) error {
	claims, err := serverSet(ctx.Obj).Claims(ctx, ctx.Client)
	if err != nil {
		return err
	}
	return workload.MarkDeparted(ctx, ctx.Client, claims, DepartedLabel, func(ordinal int) bool {
		return !slices.Contains(members, build.ServerID(ordinal))
	})
}

// bootstrapMembers returns the members a cluster starts with when it has
// no StatefulSet and no known membership: servers 1..spec.replicas, but
// none from the first whose volume is marked departed on. The servers left
// out join afterwards through the scale flow.
func (c *Controller) bootstrapMembers(ctx *Context) ([]int, error) {
	zk := ctx.Obj
	claims, err := serverSet(zk).Claims(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	n := int(zk.Spec.Replicas)
	for ordinal, pvc := range claims {
		if workload.IsDeparted(pvc, DepartedLabel) && ordinal < n {
			n = max(1, ordinal)
		}
	}
	if n < int(zk.Spec.Replicas) {
		ctx.Event(corev1.EventTypeNormal, zkv1.EventBootstrapReduced,
			"Starting with %d of %d servers: the volumes of the others belong to departed members, which join through a scale", n, zk.Spec.Replicas)
	}
	return build.IDs(int32(n)), nil
}

// holdServers holds the servers' StatefulSet at replicas or at the size
// it has, whichever is larger, for Declare to apply: a joiner's pod is
// added, and no pod goes before its member has left.
func holdServers(ctx *Context, e *ensemble, replicas int32) {
	ctx.Operation().Hold(serverSet(ctx.Obj).Name, max(replicas, e.replicas(ctx.Obj)))
}

// resizeStatefulSet holds the StatefulSet at spec.replicas once the
// members are exactly servers 1..spec.replicas (no member's pod goes
// before it has left), waits until Declare has applied that size and the
// departed pods are gone, then reclaims their volumes under policy Delete.
func (c *Controller) resizeStatefulSet(ctx *Context, e *ensemble) (bool, error) {
	zk := ctx.Obj
	want := zk.Spec.Replicas
	if slices.Equal(e.members, build.IDs(want)) {
		ctx.Operation().Hold(serverSet(zk).Name, want)
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.ReconfigTimeout)
	defer cancel()
	cfg, session, err := c.members(rctx, ctx, e)
	if err != nil || session == nil {
		return false, err
	}
	if !slices.Equal(cfg.IDs(), build.IDs(want)) {
		// spec.replicas moved on during the flow: Observe starts another.
		return true, nil
	}
	if highest := e.highestPodOrdinal; highest >= int(want) || *e.sts.Spec.Replicas != want {
		return c.wait(ctx, commonv1.ReasonScaling, fmt.Sprintf("waiting for pod %s to go", build.PodName(zk, max(highest, int(want)))))
	}
	if err := c.markDeparted(ctx, cfg.IDs()); err != nil {
		return false, err
	}
	if zk.Spec.Storage.ReclaimPolicy == commonv1.ReclaimDelete {
		return true, c.deleteVolumes(ctx, "departed server", func(ordinal int) bool { return ordinal >= int(want) })
	}
	return true, nil
}

// deleteVolumes deletes the servers' volume claims whose ordinal matches,
// and records each deletion; whose says whose volumes they are.
func (c *Controller) deleteVolumes(ctx *Context, whose string, match func(ordinal int) bool) error {
	claims, err := serverSet(ctx.Obj).Claims(ctx, ctx.Client)
	if err != nil {
		return err
	}
	deleted, err := workload.DeleteClaims(ctx, ctx.Client, claims, match)
	for _, name := range deleted {
		ctx.Log.Info("Deleted a volume claim under reclaim policy Delete", "persistentVolumeClaim", name, "of", whose)
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ctx.Obj.Namespace, Name: name}}
		ctx.EventAbout(claim, corev1.EventTypeNormal, commonv1.EventVolumeDeleted, "Deleted volume claim %s of a %s (reclaim policy Delete)", name, whose)
	}
	return err
}

// serverSet is the servers' StatefulSet as a set of pods and claims.
func serverSet(zk *Cluster) workload.Set {
	return workload.Set{Namespace: zk.Namespace, Name: zk.Name, Volume: build.DataVolume,
		Selector: build.Selector(zk, build.ComponentServer)}
}

// wait reports a step that waits for the ensemble: not done, no error, and
// why in Progressing and Ready.
func (c *Controller) wait(ctx *Context, reason, message string) (bool, error) {
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
	return false, nil
}
