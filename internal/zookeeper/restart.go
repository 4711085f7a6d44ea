package zookeeper

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
)

// The rolling-restart flow and its steps.
const (
	flowRestart           = "rolling-restart"
	stepRestartFollowers  = "restart-followers"
	stepRestartLeader     = "restart-leader"
	restartStepTimeout    = 20 * time.Minute
	restartFlowMaxAttempt = 5
)

// restartFlow moves every server onto the StatefulSet's latest pod
// template (a new zoo.cfg, image, resources or placement) by deleting its
// pod, which the StatefulSet (updateStrategy OnDelete) re-creates: servers
// that do not serve first (restarting them costs nothing), then the
// followers one at a time, then the leader, so that a rollout causes at
// most one leader election. Before each serving server goes, every member
// must serve: the one restarted before is back in the quorum, synced with
// the leader (a follower serves only once it has caught up).
//
// An ensemble of two has no fault tolerance: restarting its follower stops
// the quorum until it is back, and the leader's restart is a second
// election. Ensembles of one are down while their server restarts.
func (c *Controller) restartFlow() framework.Flow[*Cluster] {
	return framework.Flow[*Cluster]{
		Name: flowRestart,
		Steps: []framework.Step[*Cluster]{
			{Name: stepRestartFollowers, Timeout: restartStepTimeout, Run: func(ctx *Context) (bool, error) {
				return c.restartNext(ctx, false)
			}},
			{Name: stepRestartLeader, Timeout: restartStepTimeout, Run: func(ctx *Context) (bool, error) {
				return c.restartNext(ctx, true)
			}},
		},
		MaxAttempts: restartFlowMaxAttempt,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: time.Minute},
	}
}

// nextRestart picks the server to restart next, or says what to wait for.
// Nothing to restart and nothing to wait for means the step is done; with
// leaderToo false, a stale leader alone is left for the next step.
func nextRestart(e *ensemble, leaderToo bool) (victim *server, wait string) {
	stale := e.stale()
	for _, s := range stale {
		if !s.serving() {
			return s, ""
		}
	}
	if n := e.servingMembers(e.members); e.leader == nil || n < len(e.members) {
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

// restartNext restarts at most one server per run. It applies the servers
// first, so that the rollout always heads for the latest spec.
func (c *Controller) restartNext(ctx *Context, leaderToo bool) (bool, error) {
	zk := ctx.Obj
	e, err := c.observe(ctx)
	if err != nil {
		return false, err
	}
	if err := c.applyServers(ctx, e.replicas(zk), e.members); err != nil {
		return false, err
	}
	c.setConditions(ctx, e)
	if !e.revisionKnown() {
		return c.wait(ctx, "Restarting", "waiting for the StatefulSet controller to see the new pod template")
	}
	victim, wait := nextRestart(e, leaderToo)
	switch {
	case wait != "":
		return c.wait(ctx, "Restarting", wait)
	case victim == nil:
		return true, nil
	}
	pod := victim.pod
	err = ctx.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	ctx.Log.Info("Restarting a server", "pod", pod.Name, "role", victim.role(), "revision", e.sts.Status.UpdateRevision)
	ctx.Event(corev1.EventTypeNormal, "ServerRestarted", "Restarting server %d (%s, %s) onto revision %s",
		victim.id(), pod.Name, victim.role(), e.sts.Status.UpdateRevision)
	return c.wait(ctx, "Restarting", fmt.Sprintf("restarting server %d (%s)", victim.id(), victim.role()))
}
