package zookeeper

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
)

// The rolling-restart flow and its steps.
const (
	flowRestart          = "rolling-restart"
	stepRestartFollowers = "restart-followers"
	stepRestartLeader    = "restart-leader"
	// restartStepTimeout bounds a whole step, not one server: an hour
	// leaves each server of a 15-server ensemble four minutes.
	restartStepTimeout    = time.Hour
	restartFlowMaxAttempt = 5
)

// restartFlow moves every server onto the StatefulSet's latest pod
// template (a new zoo.cfg, image, resources or placement) by evicting its
// pod, which the StatefulSet (updateStrategy OnDelete) re-creates. Evicting
// rather than deleting keeps the PodDisruptionBudget in charge, so a node
// drain running at the same time cannot take another server down (and
// maxUnavailable 0 holds rollouts too, as it holds drains). The order: servers
// that do not serve first (restarting them costs nothing), then the
// followers one at a time, then the leader, so that a rollout causes at
// most one leader election. Before each serving server goes, every member
// must serve: the one restarted before is back in the quorum, synced with
// the leader (a follower serves only once it has caught up).
//
// An ensemble of two has no fault tolerance: restarting its follower stops
// the quorum until it is back, and the leader's restart is a second
// election. Ensembles of one are down while their server restarts.
func (c *Controller) restartFlow() framework.Flow[*Cluster, *ensemble] {
	return framework.Flow[*Cluster, *ensemble]{
		Name: flowRestart,
		Steps: []framework.Step[*Cluster, *ensemble]{
			{Name: stepRestartFollowers, Timeout: restartStepTimeout, Run: func(ctx *Context, e *ensemble) (bool, error) {
				return c.restartNext(ctx, e, false)
			}},
			{Name: stepRestartLeader, Timeout: restartStepTimeout, Run: func(ctx *Context, e *ensemble) (bool, error) {
				return c.restartNext(ctx, e, true)
			}},
		},
		MaxAttempts: restartFlowMaxAttempt,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: time.Minute},
	}
}

// nextRestart picks the server to restart next, or says what to wait for.
// Nothing to restart and nothing to wait for means the step is done; with
// leaderToo false, a stale leader alone is left for the next step.
//
// A stale server that does not serve may go without waiting for the others
// (restarting it takes nothing from the quorum, and a server crash-looping
// on a bad revision must not block its fix), but only when that is safe:
// it is not a member, or it is the only member down and the rest hold a
// quorum, or its pod has not been ready for longer than stuckAfter. A
// probe that timed out, or an election in progress, does not make two
// members go at once.
func nextRestart(e *ensemble, leaderToo bool, now time.Time) (victim *server, wait string) {
	stale := e.stale()
	down := len(e.members) - e.servingMembers(e.members)
	for _, s := range stale {
		if s.serving() {
			continue
		}
		member := slices.Contains(e.members, s.id())
		if !member || down == 1 && e.hasQuorum() || workload.UnreadyFor(s.pod, now) > stuckAfter {
			return s, ""
		}
	}
	if n := len(e.members) - down; e.leader == nil || down > 0 {
		return nil, fmt.Sprintf("waiting for every member to serve (%d of %d do, leader known: %t)", n, len(e.members), e.leader != nil)
	}
	for _, s := range stale {
		if s != e.leader {
			return s, ""
		}
	}
	if len(stale) > 0 && leaderToo {
		return e.leader, ""
	}
	return nil, ""
}

// stuckAfter is how long a stale server's pod may stay unready before a
// rolling restart replaces it whatever the others do.
const stuckAfter = 2 * time.Minute

// restartNext restarts at most one server per run. Declare has applied the
// servers for the latest spec in the same pass, so the rollout always heads
// for it.
func (c *Controller) restartNext(ctx *Context, e *ensemble, leaderToo bool) (bool, error) {
	zk := ctx.Obj
	if !e.revisionKnown() {
		return c.wait(ctx, commonv1.ReasonRestarting, "waiting for the StatefulSet controller to see the new pod template")
	}
	victim, wait := nextRestart(e, leaderToo, time.Now())
	switch {
	case wait != "":
		return c.wait(ctx, commonv1.ReasonRestarting, wait)
	case victim == nil:
		return true, nil
	}
	pod := victim.pod
	switch evicted, err := workload.Evict(ctx, ctx.Client, pod); {
	case err != nil:
		return false, err
	case !evicted:
		return c.wait(ctx, commonv1.ReasonRestarting, fmt.Sprintf(
			"the PodDisruptionBudget allows no disruption now (maxUnavailable %d); server %d waits", *zk.Spec.MaxUnavailable, victim.id()))
	}
	ctx.Log.Info("Restarting a server", "pod", pod.Name, "role", victim.role(), "revision", e.sts.Status.UpdateRevision)
	ctx.Event(corev1.EventTypeNormal, zkv1.EventServerRestarted, "Restarting server %d (%s, %s) onto revision %s",
		victim.id(), pod.Name, victim.role(), e.sts.Status.UpdateRevision)
	return c.wait(ctx, commonv1.ReasonRestarting, fmt.Sprintf("restarting server %d (%s)", victim.id(), victim.role()))
}
