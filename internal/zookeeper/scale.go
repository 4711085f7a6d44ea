package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
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
func (c *Controller) scaleFlow() framework.Flow[*Cluster] {
	return framework.Flow[*Cluster]{
		Name: flowScale,
		Steps: []framework.Step[*Cluster]{
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
// operator restarted does not change it twice.
func (c *Controller) changeMembers(ctx *Context) (bool, error) {
	zk := ctx.Obj
	e, err := c.report(ctx)
	if err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.ReconfigTimeout)
	defer cancel()
	cfg, session, err := c.members(rctx, ctx, e)
	if err != nil || session == nil {
		return false, err
	}
	ids := cfg.IDs()
	replicas := max(e.replicas(zk), int32(slices.Max(ids)))
	add, remove := nextMemberChange(ids, int(zk.Spec.Replicas))
	switch {
	case add != 0:
		replicas = max(replicas, int32(build.Ordinal(add)+1))
		if _, err := c.applyServers(ctx, replicas, ids, add); err != nil {
			return false, err
		}
		if s := e.member(add); s == nil || !s.serving() {
			return c.wait(ctx, commonv1.ReasonScaling, fmt.Sprintf("waiting for server %d to start and follow the leader before it joins", add))
		}
		next, err := zkclient.AddMember(rctx, session.addrs, build.Members(zk, []int{add}, c.opts.ClusterDomain)[0], cfg.Version, session.auth)
		if err != nil {
			return c.reconfigFailed(ctx, fmt.Errorf("add server %d: %w", add, err))
		}
		c.committed(ctx, cfg, next, replicas, zkv1.EventMemberAdded, fmt.Sprintf("Server %d joined the ensemble", add))
		return false, nil
	case remove != 0:
		remaining := slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id == remove })
		if n := e.servingMembers(remaining); n < quorum(len(remaining)) {
			return c.wait(ctx, commonv1.ReasonQuorumAtRisk, fmt.Sprintf(
				"not removing server %d: %d of the remaining %d members serve, a quorum needs %d", remove, n, len(remaining), quorum(len(remaining))))
		}
		next, err := zkclient.RemoveMember(rctx, session.addrs, remove, cfg.Version, session.auth)
		if err != nil {
			return c.reconfigFailed(ctx, fmt.Errorf("remove server %d: %w", remove, err))
		}
		c.committed(ctx, cfg, next, replicas, zkv1.EventMemberRemoved, fmt.Sprintf("Server %d left the ensemble", remove))
		return false, nil
	}
	_, err = c.applyServers(ctx, replicas, ids, 0)
	return err == nil, err
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
// follow, and an Event says what changed, only when it did (a repeated run
// finds its change done and says nothing).
func (c *Controller) committed(ctx *Context, before, after zkclient.Config, replicas int32, reason, message string) {
	ids := after.IDs()
	ctx.Obj.Status.Members = toInt32(ids)
	// The voting views cached before the change are stale now.
	c.stats.Forget(string(ctx.Obj.UID), nil)
	if after.Version != before.Version {
		ctx.Log.Info("Ensemble reconfigured", "members", ids, "version", fmt.Sprintf("%#x", after.Version))
		ctx.Event(corev1.EventTypeNormal, reason, "%s; members %v (configuration version %#x)", message, ids, after.Version)
	}
	if _, err := c.applyServers(ctx, replicas, ids, 0); err != nil {
		// The next run applies it again; membership is committed already.
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
	claims, err := serverClaims(ctx)
	if err != nil {
		return err
	}
	for ordinal, pvc := range claims {
		departed := !slices.Contains(members, build.ServerID(ordinal))
		if _, marked := pvc.Labels[DepartedLabel]; marked == departed {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		if departed {
			metav1.SetMetaDataLabel(&pvc.ObjectMeta, DepartedLabel, "true")
		} else {
			delete(pvc.Labels, DepartedLabel)
		}
		err = ctx.Client.Patch(ctx, pvc, patch)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("label volume claim %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// bootstrapMembers returns the members a cluster starts with when it has
// no StatefulSet and no known membership: servers 1..spec.replicas, but
// none from the first whose volume is marked departed on. The servers left
// out join afterwards through the scale flow.
func (c *Controller) bootstrapMembers(ctx *Context) ([]int, error) {
	zk := ctx.Obj
	claims, err := serverClaims(ctx)
	if err != nil {
		return nil, err
	}
	n := int(zk.Spec.Replicas)
	for ordinal, pvc := range claims {
		if _, departed := pvc.Labels[DepartedLabel]; departed && ordinal < n {
			n = max(1, ordinal)
		}
	}
	if n < int(zk.Spec.Replicas) {
		ctx.Event(corev1.EventTypeNormal, zkv1.EventBootstrapReduced,
			"Starting with %d of %d servers: the volumes of the others belong to departed members, which join through a scale", n, zk.Spec.Replicas)
	}
	return build.IDs(int32(n)), nil
}

// resizeStatefulSet sizes the StatefulSet to spec.replicas once the
// membership matches, waits for the departed pods to go, and reclaims their
// volumes under policy Delete.
func (c *Controller) resizeStatefulSet(ctx *Context) (bool, error) {
	zk := ctx.Obj
	e, err := c.report(ctx)
	if err != nil {
		return false, err
	}
	want := zk.Spec.Replicas
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
	if _, err := c.applyServers(ctx, want, cfg.IDs(), 0); err != nil {
		return false, err
	}
	if highest := e.highestPodOrdinal; highest >= int(want) {
		return c.wait(ctx, commonv1.ReasonScaling, fmt.Sprintf("waiting for pod %s to go", build.PodName(zk, highest)))
	}
	if err := c.markDeparted(ctx, cfg.IDs()); err != nil {
		return false, err
	}
	if zk.Spec.Storage.ReclaimPolicy == commonv1.ReclaimDelete {
		return true, c.deleteVolumes(ctx, func(ordinal int) bool { return ordinal >= int(want) })
	}
	return true, nil
}

// deleteVolumes deletes the servers' volume claims whose ordinal matches.
func (c *Controller) deleteVolumes(ctx *Context, match func(ordinal int) bool) error {
	claims, err := serverClaims(ctx)
	if err != nil {
		return err
	}
	for ordinal, pvc := range claims {
		if !match(ordinal) {
			continue
		}
		err := ctx.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone already, or another claim of that name now
		}
		if err != nil {
			return fmt.Errorf("delete volume claim %s: %w", pvc.Name, err)
		}
		ctx.Log.Info("Deleted a departed server's volume claim", "persistentVolumeClaim", pvc.Name)
		ctx.Event(corev1.EventTypeNormal, zkv1.EventVolumeDeleted, "Deleted volume claim %s (reclaim policy Delete)", pvc.Name)
	}
	return nil
}

// serverClaims returns the servers' volume claims by ordinal, those being
// deleted left out.
func serverClaims(ctx *Context) (map[int]*corev1.PersistentVolumeClaim, error) {
	zk := ctx.Obj
	var list corev1.PersistentVolumeClaimList
	if err := ctx.Client.List(ctx, &list, client.InNamespace(zk.Namespace),
		client.MatchingLabels(build.Selector(zk, build.ComponentServer))); err != nil {
		return nil, fmt.Errorf("list the servers' volume claims: %w", err)
	}
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for i := range list.Items {
		pvc := &list.Items[i]
		if ordinal, ok := claimOrdinal(zk, pvc); ok && pvc.DeletionTimestamp == nil {
			claims[ordinal] = pvc
		}
	}
	return claims, nil
}

// claimOrdinal is the ordinal of a claim data-<name>-<ordinal>.
func claimOrdinal(zk *Cluster, pvc *corev1.PersistentVolumeClaim) (int, bool) {
	return ordinalOf(pvc.Name, build.DataVolume+"-"+zk.Name+"-")
}

// wait reports a step that waits for the ensemble: not done, no error, and
// why in Progressing and Ready.
func (c *Controller) wait(ctx *Context, reason, message string) (bool, error) {
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
	return false, nil
}
