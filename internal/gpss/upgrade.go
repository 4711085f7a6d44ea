package gpss

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// The rollout flow moves the instances onto the StatefulSet's latest pod
// template one at a time, whatever changed in it: spec.image (a rollback
// is a rollout to the previous image), spec.config (a new gpss.json
// ConfigMap), spec.resources, the etcd's endpoints, placement. The
// StatefulSet updates OnDelete, and the flow deletes one instance's pod,
// then waits until every instance is ready and no job is in error (the
// restarted instance runs its jobs again) before the next. An instance on
// the new template that does not become ready within
// spec.rolloutHaltSeconds halts the rollout: the flow keeps waiting,
// Progressing and Ready say ReasonRolloutHalted and how to roll back (a
// Warning Event records it once), and no other instance is touched.
// Changing the spec again (setting spec.image back, say) makes a new
// latest template and interrupts the flow; the rollout that follows
// restarts the instances that are not ready first (restarting an instance
// that serves nothing cannot hurt), so a crash-looping instance is rolled
// back at once.
const (
	flowRollout          = "rollout"
	stepRestartInstances = "restart-instances"
	// ReasonRolloutHalted: an instance on the new pod template is not
	// ready.
	ReasonRolloutHalted = commonv1.ReasonRolloutHalted
)

func (c *Controller) rolloutFlow() framework.Flow[*Cluster] {
	return framework.Flow[*Cluster]{
		Name:  flowRollout,
		Steps: []framework.Step[*Cluster]{{Name: stepRestartInstances, Run: c.restartInstances}},
		Poll:  time.Second,
	}
}

// rolloutTrigger names the StatefulSet revision a rollout moves to.
func rolloutTrigger(revision string) string { return "revision " + revision }

// InterruptFlow ends a rollout whose target is no longer the StatefulSet's
// latest pod template (a rollback, another change): Observe starts the
// rollout to the new target in the same pass (framework.FlowInterrupter).
func (c *Controller) InterruptFlow(ctx *Context, op *commonv1.Operation) (string, bool) {
	cl, ok := observed.Get(ctx)
	if !ok || op.Name != flowRollout || !workload.RevisionKnown(cl.sts) {
		return "", false
	}
	if rev := cl.sts.Status.UpdateRevision; op.Trigger != rolloutTrigger(rev) {
		return fmt.Sprintf("the pod template changed again (revision %s)", rev), true
	}
	return "", false
}

// restartInstances restarts the next instance, or waits; done when every
// instance runs the latest pod template and is ready.
func (c *Controller) restartInstances(ctx *Context) (bool, error) {
	g := ctx.Obj
	cl, err := observed.MustGet(ctx)
	if err != nil {
		return false, err
	}
	if !workload.RevisionKnown(cl.sts) {
		return false, nil
	}
	old := stale(cl)
	// Not ready and on an old image: nothing to lose by restarting it.
	for _, ordinal := range old {
		if p := cl.pods[ordinal]; !serving(p) {
			return false, c.restart(ctx, p, "it is not ready")
		}
	}
	now := time.Now()
	for _, ordinal := range slices.Sorted(maps.Keys(cl.pods)) {
		p := cl.pods[ordinal]
		if serving(p) {
			continue
		}
		if unready := workload.UnreadyFor(p, now); unready > time.Duration(g.Spec.RolloutHaltSeconds)*time.Second {
			// The time it turned unready, not for how long: a message that
			// changed every pass would rewrite status every pass.
			msg := fmt.Sprintf("%s runs %s and has not been ready since %s", p.Name, podImage(p),
				workload.UnreadySince(p).UTC().Format(time.RFC3339))
			if d := workload.NotReadyDetail(p); d != "" {
				msg += " (" + d + ")"
			}
			msg += "; " + rollbackHint(g, p)
			ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, ReasonRolloutHalted, msg)
			ctx.SetReady(false, ReasonRolloutHalted, msg)
		}
		return false, nil
	}
	if len(cl.pods) < int(g.Spec.Replicas) {
		return false, nil
	}
	if len(old) == 0 {
		return true, nil
	}
	if ok, err := c.jobsRunning(ctx); err != nil || !ok {
		return false, err
	}
	// The highest ordinal first, as a StatefulSet rolls.
	return false, c.restart(ctx, cl.pods[old[len(old)-1]], "to run "+g.Spec.Image)
}

// jobsRunning reports whether no job is in error: while an instance is
// restarting its jobs are, until it runs them again.
func (c *Controller) jobsRunning(ctx *Context) (bool, error) {
	ok := true
	err := c.withJobs(ctx, func(_ *jobs, codes map[string]job.JobStatusCode) error {
		for _, code := range codes {
			ok = ok && code != job.JobStatusCode_JOB_ERROR
		}
		return nil
	})
	return ok && err == nil, err
}

func (c *Controller) restart(ctx *Context, p *corev1.Pod, why string) error {
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})); err != nil {
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	ctx.Event(corev1.EventTypeNormal, "InstanceRestarted", "Restarted %s (%s), %s", p.Name, podImage(p), why)
	return nil
}

// rollbackHint says how to roll back a halted rollout: set spec.image back
// when the halted instance runs a new image, else undo the last change to
// the spec.
func rollbackHint(g *Cluster, p *corev1.Pod) string {
	if cur := g.Status.CurrentImage; cur != "" && podImage(p) != cur {
		return fmt.Sprintf("set spec.image back to %s to roll back", cur)
	}
	return "undo the last change to the spec to roll back"
}
