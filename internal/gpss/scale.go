package gpss

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// The scale-in flow. GPSS runs each job on one instance and says nowhere
// which, so the operator cannot move only the departing instances' jobs:
// it stops every running job (recording them in status first, so that an
// operator restarted midway still knows them), removes the instances and
// their gpfdist Services, last first, and starts the same jobs again,
// which the instances that stay take. A client may start a job while the
// flow runs, and GPSS may give it to a departing instance, which has none
// left to run: it goes to JOB_ERROR when that instance goes. The flow
// therefore also records the jobs already in error when it began, and
// starts again, with the stopped ones, every other job in error once the
// departing instances are gone. Jobs pause for the length of a scale-in;
// none is left without an instance, and none runs twice. Scaling out
// needs no flow: new instances simply join.
const (
	flowScaleIn         = "scale-in"
	stepRecordJobs      = "record-jobs"
	stepStopJobs        = "stop-jobs"
	stepRemoveInstances = "remove-instances"
	stepStartJobs       = "start-jobs"
	scaleInStepTime     = 5 * time.Minute
)

func (c *Controller) scaleInFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowScaleIn,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepRecordJobs, Run: c.recordJobs, Timeout: scaleInStepTime},
			{Name: stepStopJobs, Run: c.stopJobs, Timeout: scaleInStepTime},
			// Named "shrink" while Declare shrank the StatefulSet on seeing it
			// run: operations persisted then resume here.
			{Name: stepRemoveInstances, Was: []string{"shrink"}, Run: c.removeInstances, Timeout: scaleInStepTime},
			{Name: stepStartJobs, Run: c.startStoppedJobs, Timeout: scaleInStepTime},
		},
		Poll:    time.Second,
		Backoff: stepBackoff,
	}
}

// desiredReplicas is the instances' StatefulSet's size for this pass:
// spec.replicas, or more. A StatefulSet larger than spec.replicas keeps its
// size: its instances may run jobs, and only a scale-in flow, once it has
// stopped them, releases them, by holding the StatefulSet at a smaller
// size (status.operation.held). Growing needs no flow.
func desiredReplicas(g *Cluster, cl *cluster, op *commonv1.Operation) int32 {
	return workload.Replicas(g.Spec.Replicas, cl.sts, op)
}

// recordJobs records the running jobs in status.stoppedJobs (before any is
// stopped: a step that runs again finds the same ones running), and those
// already in error in status.jobsInErrorBeforeScaleIn, which the flow
// leaves alone.
func (c *Controller) recordJobs(ctx *Context, _ *cluster) (bool, error) {
	g := ctx.Obj
	if len(g.Status.StoppedJobs) > 0 {
		return true, nil
	}
	err := c.withJobs(ctx, func(_ *jobs, codes map[string]job.JobStatusCode) error {
		g.Status.StoppedJobs = withCode(codes, job.JobStatusCode_JOB_RUNNING)
		g.Status.JobsInErrorBeforeScaleIn = withCode(codes, job.JobStatusCode_JOB_ERROR)
		return nil
	})
	if err != nil {
		return false, err
	}
	ctx.Log.Info("Recorded the running jobs before a scale-in", "jobs", len(g.Status.StoppedJobs), "inError", len(g.Status.JobsInErrorBeforeScaleIn))
	return true, nil
}

// stopJobs stops each recorded job that is not stopped yet; done once none
// of them runs.
func (c *Controller) stopJobs(ctx *Context, _ *cluster) (bool, error) {
	g := ctx.Obj
	if len(g.Status.StoppedJobs) == 0 {
		return true, nil
	}
	if err := c.moveRecordedJobs(ctx, job.JobStatusCode_JOB_STOPPED, (*jobs).stop); err != nil {
		return false, err
	}
	ctx.Event(corev1.EventTypeNormal, gpssv1.EventJobsStopped, "Stopped %d jobs to scale in to %d instances", len(g.Status.StoppedJobs), g.Spec.Replicas)
	return true, nil
}

// moveRecordedJobs calls move for each job of status.stoppedJobs that
// exists and is not in state want yet (a job removed meanwhile is left
// alone).
func (c *Controller) moveRecordedJobs(ctx *Context, want job.JobStatusCode, move func(*jobs, context.Context, string, job.JobStatusCode) error) error {
	return c.withJobs(ctx, func(j *jobs, codes map[string]job.JobStatusCode) error {
		return moveJobs(ctx, j, codes, ctx.Obj.Status.StoppedJobs, want, move)
	})
}

// moveJobs calls move for each job of ids that exists in codes and is not
// in state want yet.
func moveJobs(ctx context.Context, j *jobs, codes map[string]job.JobStatusCode, ids []string, want job.JobStatusCode, move func(*jobs, context.Context, string, job.JobStatusCode) error) error {
	for _, id := range ids {
		if code, ok := codes[id]; ok && code != want {
			if err := move(j, ctx, id, code); err != nil {
				return err
			}
		}
	}
	return nil
}

// inErrorSinceRecorded returns the jobs in error that were neither in
// error when the scale-in began nor recorded as stopped, sorted: jobs a
// client started during the flow, on an instance that has gone since.
func inErrorSinceRecorded(st *gpssv1.GpssClusterStatus, codes map[string]job.JobStatusCode) []string {
	var out []string
	for _, id := range withCode(codes, job.JobStatusCode_JOB_ERROR) {
		if !slices.Contains(st.JobsInErrorBeforeScaleIn, id) && !slices.Contains(st.StoppedJobs, id) {
			out = append(out, id)
		}
	}
	return out
}

// removeInstances holds the StatefulSet at spec.replicas, which Declare
// applies (deleting the departing instances' gpfdist Services), and is done
// once the departing instances' pods are gone, terminating ones included: a
// terminating instance still runs, and would take jobs started now. The
// jobs are stopped by now (stop-jobs), so no job loses its instance.
func (c *Controller) removeInstances(ctx *Context, cl *cluster) (bool, error) {
	g := ctx.Obj
	want := g.Spec.Replicas
	ctx.Operation().Hold(build.InstancesName(g), want)
	return cl.sts != nil && ptr.Deref(cl.sts.Spec.Replicas, 0) == want && cl.highestPod < int(want), nil
}

// startStoppedJobs starts the recorded jobs again once the instances that
// stay are ready, then clears the record. Jobs that went to JOB_ERROR
// during the flow join the record first, in a pass of their own, so that
// one stopped and not yet started again is known to an operator restarted
// in between.
func (c *Controller) startStoppedJobs(ctx *Context, cl *cluster) (bool, error) {
	g := ctx.Obj
	if cl.readyPods() == 0 {
		return false, nil
	}
	recorded := false
	err := c.withJobs(ctx, func(j *jobs, codes map[string]job.JobStatusCode) error {
		if late := inErrorSinceRecorded(&g.Status, codes); len(late) > 0 {
			ctx.Log.Info("Recorded jobs that went to JOB_ERROR during the scale-in, to start them again", "jobs", late)
			g.Status.StoppedJobs = slices.Sorted(slices.Values(append(g.Status.StoppedJobs, late...)))
			recorded = true
			return nil
		}
		return moveJobs(ctx, j, codes, g.Status.StoppedJobs, job.JobStatusCode_JOB_RUNNING, (*jobs).restart)
	})
	if err != nil || recorded {
		return false, err
	}
	if len(g.Status.StoppedJobs) > 0 {
		ctx.Event(corev1.EventTypeNormal, gpssv1.EventJobsStarted, "Started %d jobs again on %d instances", len(g.Status.StoppedJobs), g.Spec.Replicas)
	}
	g.Status.StoppedJobs = nil
	g.Status.JobsInErrorBeforeScaleIn = nil
	return true, nil
}

// scaleInTrigger names a scale-in for status.operation.trigger.
func scaleInTrigger(from, to int32) string { return fmt.Sprintf("replicas %d to %d", from, to) }
