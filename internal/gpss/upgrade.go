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

// The rollout flow moves the instances to spec.image (or back: a rollback
// is a rollout to the previous image) one at a time: the StatefulSet
// updates OnDelete, and the flow deletes one instance's pod, then waits
// until every instance is ready and no job is in error (the restarted
// instance runs its jobs again) before the next. An instance on the new
// image that does not become ready within spec.rolloutHaltSeconds halts the
// rollout: the flow keeps waiting, Progressing and Ready say
// ReasonRolloutHalted and how to roll back, and no other instance is
// touched. Setting spec.image back interrupts the flow; the rollout that
// follows restarts the instances that are not ready first (restarting an
// instance that serves nothing cannot hurt), so a crash-looping instance
// is rolled back at once.
const (
	flowRollout          = "rollout"
	stepRestartInstances = "restart-instances"
	// ReasonRolloutHalted: an instance on the new image is not ready.
	ReasonRolloutHalted = "RolloutHalted"
)

func (c *Controller) rolloutFlow() framework.Flow[*Cluster] {
	return framework.Flow[*Cluster]{
		Name:  flowRollout,
		Steps: []framework.Step[*Cluster]{{Name: stepRestartInstances, Run: c.restartInstances}},
		Poll:  time.Second,
	}
}

func rolloutTrigger(image string) string { return "image " + image }

// stale returns the ordinals of the instances whose pods run another image
// than spec.image, sorted.
func stale(g *Cluster, cl *cluster) []int {
	var out []int
	for ordinal, p := range cl.pods {
		if podImage(p) != g.Spec.Image {
			out = append(out, ordinal)
		}
	}
	slices.Sort(out)
	return out
}

// InterruptFlow ends a rollout whose target image is no longer spec.image
// (a rollback, or another upgrade): Observe starts the rollout to the new
// target in the same pass (framework.FlowInterrupter).
func (c *Controller) InterruptFlow(ctx *Context, op *commonv1.Operation) (string, bool) {
	g := ctx.Obj
	if op.Name == flowRollout && op.Trigger != rolloutTrigger(g.Spec.Image) {
		return fmt.Sprintf("spec.image is now %s", g.Spec.Image), true
	}
	return "", false
}

// restartInstances restarts the next instance, or waits; done when every
// instance runs spec.image and is ready.
func (c *Controller) restartInstances(ctx *Context) (bool, error) {
	g := ctx.Obj
	cl, err := observed.MustGet(ctx)
	if err != nil {
		return false, err
	}
	old := stale(g, cl)
	// Not ready and on an old image: nothing to lose by restarting it.
	for _, ordinal := range old {
		if p := cl.pods[ordinal]; !workload.IsReady(p) {
			return false, c.restart(ctx, p, "it is not ready")
		}
	}
	now := time.Now()
	for _, ordinal := range slices.Sorted(maps.Keys(cl.pods)) {
		p := cl.pods[ordinal]
		if workload.IsReady(p) {
			continue
		}
		if unready := workload.UnreadyFor(p, now); unready > time.Duration(g.Spec.RolloutHaltSeconds)*time.Second {
			msg := fmt.Sprintf("%s runs %s and has not been ready for %s; set spec.image back to %s to roll back",
				p.Name, g.Spec.Image, unready.Round(time.Second), g.Status.CurrentImage)
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
