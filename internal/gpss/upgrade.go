package gpss

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
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
// Progressing and Ready say commonv1.ReasonRolloutHalted and how to roll back (a
// Warning Event records it once), and no other instance is touched.
// Changing the spec again (setting spec.image back, say) makes a new
// latest template and interrupts the flow; the rollout that follows
// restarts the instances that are not ready first (restarting an instance
// that serves nothing cannot hurt), so a crash-looping instance is rolled
// back at once.
const (
	flowRollout          = "rollout"
	stepRestartInstances = "restart-instances"
)

func (c *Controller) rolloutFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name:    flowRollout,
		Steps:   []framework.Step[*Cluster, *cluster]{{Name: stepRestartInstances, Run: c.restartInstances}},
		Poll:    time.Second,
		Backoff: stepBackoff,
	}
}

// stepBackoff spaces the failed attempts of GPSS's steps. Their calls are
// short (ListJobs, StartJob, StopJob), so a step that ran 30 s without an
// error has left its failures behind: a rollout of many instances, each
// restart of which may fail one call through the Service, is not failed
// by errors spread over it.
var stepBackoff = framework.Backoff{Initial: time.Second, Max: 30 * time.Second}

// rolloutTrigger names the StatefulSet revision a rollout moves to.
func rolloutTrigger(revision string) string { return "revision " + revision }

// InterruptFlow ends a rollout whose target is no longer the StatefulSet's
// latest pod template (a rollback, another change): Observe starts the
// rollout to the new target in the same pass (framework.FlowInterrupter).
func (c *Controller) InterruptFlow(_ *Context, cl *cluster, op *commonv1.Operation) (string, bool) {
	if cl == nil || op.Name != flowRollout || !workload.RevisionKnown(cl.sts) {
		return "", false
	}
	if rev := cl.sts.Status.UpdateRevision; op.Trigger != rolloutTrigger(rev) {
		return fmt.Sprintf("the pod template changed again (revision %s)", rev), true
	}
	return "", false
}

// restartInstances restarts the next instance, or waits; done when every
// instance runs the latest pod template and is ready.
func (c *Controller) restartInstances(ctx *Context, cl *cluster) (bool, error) {
	g := ctx.Obj
	if !workload.RevisionKnown(cl.sts) {
		return false, nil
	}
	old := stale(cl)
	// Not serving on an earlier template (crash-looping, or asked and not
	// answering: its configuration may be what is wrong, a bad etcd
	// address): nothing to lose by restarting it, out of turn. One at a
	// time, and never an instance not heard yet (after an operator
	// upgrade, its first answer pending): it may serve.
	if !unheard(cl) {
		for _, ordinal := range old {
			if p := cl.pods[ordinal]; crashing(p) || answeredNotServing(p) {
				return false, c.restart(ctx, p, "it does not serve")
			}
		}
	}
	now := time.Now()
	for _, ordinal := range slices.Sorted(maps.Keys(cl.pods)) {
		p := cl.pods[ordinal]
		if serving(p) {
			continue
		}
		if since := notServingSince(p); now.Sub(since) > time.Duration(g.Spec.RolloutHaltSeconds)*time.Second {
			// The time it turned unready, not for how long: a message that
			// changed every pass would rewrite status every pass.
			msg := fmt.Sprintf("%s runs %s and has not been ready since %s", p.Name, podImage(p),
				since.UTC().Format(time.RFC3339))
			if d := workload.NotReadyDetail(p); d != "" {
				msg += " (" + d + ")"
			}
			msg += "; " + rollbackHint(g, p)
			ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, commonv1.ReasonRolloutHalted, msg)
			ctx.SetReady(false, commonv1.ReasonRolloutHalted, msg)
		}
		return false, nil
	}
	if len(cl.pods) < int(g.Spec.Replicas) {
		return false, nil
	}
	if len(old) == 0 {
		return true, nil
	}
	if inError, err := c.jobsInError(ctx); err != nil || len(inError) > 0 {
		if len(inError) > 0 {
			ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, commonv1.ReasonRestarting,
				fmt.Sprintf("waiting for jobs in JOB_ERROR to run again before the next instance restarts: %s (stop and start a job that stays in error)",
					strings.Join(inError[:min(len(inError), maxJobsInError)], ", ")))
		}
		return false, err
	}
	// The highest ordinal first, as a StatefulSet rolls.
	return false, c.restart(ctx, cl.pods[old[len(old)-1]], "to run "+g.Spec.Image)
}

// jobsInError returns the jobs in error, sorted: while an instance is
// restarting its jobs are, until it runs them again.
func (c *Controller) jobsInError(ctx *Context) ([]string, error) {
	var out []string
	err := c.withJobs(ctx, func(_ *jobs, codes map[string]job.JobStatusCode) error {
		out = withCode(codes, job.JobStatusCode_JOB_ERROR)
		return nil
	})
	return out, err
}

func (c *Controller) restart(ctx *Context, p *corev1.Pod, why string) error {
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})); err != nil {
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	ctx.Event(corev1.EventTypeNormal, gpssv1.EventInstanceRestarted, "Restarted %s (%s), %s", p.Name, podImage(p), why)
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
