package gpss

import (
	"slices"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// TestDesiredReplicas checks how Declare sizes the instances' StatefulSet:
// from spec.replicas, the size it has and the size an operation holds
// (status.operation.held), never from which flow or step runs.
func TestDesiredReplicas(t *testing.T) {
	holding := func(replicas int32) *commonv1.Operation {
		op := commonv1.NewOperation(flowScaleIn, "t", []string{stepRecordJobs, stepStopJobs, stepRemoveInstances, stepStartJobs}, metav1.Now())
		op.Hold("g", replicas)
		return op
	}
	ended := func(replicas int32, phase commonv1.Phase) *commonv1.Operation {
		op := holding(replicas)
		op.Finish(phase, metav1.Now())
		return op
	}
	failed := holding(1)
	failed.Finish(commonv1.PhaseFailed, metav1.Now())
	otherSet := holding(1)
	otherSet.Held[0].Workload = "g-etcd"
	running := commonv1.NewOperation(flowScaleIn, "t", []string{stepRecordJobs, stepStopJobs, stepRemoveInstances, stepStartJobs}, metav1.Now())
	running.SetCurrent(2, metav1.Now()) // remove-instances, before its first run holds anything
	for _, tc := range []struct {
		name string
		want int32 // spec.replicas
		sts  int32 // the StatefulSet's replicas; 0 when it does not exist
		op   *commonv1.Operation
		size int32
	}{
		{"a new cluster", 3, 0, nil, 3},
		{"a new cluster ignores a hold", 3, 0, holding(1), 3},
		{"steady", 3, 3, nil, 3},
		{"growing needs no flow", 5, 3, nil, 5},
		{"no hold: a larger set keeps its size", 1, 3, nil, 3},
		{"no hold yet, whatever the step", 1, 3, running, 3},
		{"a held size shrinks the set", 1, 3, holding(1), 1},
		{"a failed flow keeps its hold", 1, 3, failed, 1},
		{"never below spec.replicas", 4, 3, holding(2), 4},
		{"a held size above spec.replicas", 1, 3, holding(2), 2},
		{"a succeeded flow's hold is over", 1, 3, ended(1, commonv1.PhaseSucceeded), 3},
		{"an aborted flow's hold is over", 1, 3, ended(1, commonv1.PhaseAborted), 3},
		{"another workload's hold", 1, 3, otherSet, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: gpssv1.GpssClusterSpec{Replicas: tc.want}}
			cl := &cluster{}
			if tc.sts > 0 {
				cl.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(tc.sts)}}
			}
			if got := desiredReplicas(g, cl, tc.op); got != tc.size {
				t.Errorf("desiredReplicas = %d, want %d", got, tc.size)
			}
		})
	}
}

// TestRemoveInstancesHolds checks that the scale-in's remove-instances step
// holds the StatefulSet at spec.replicas and is done only once the set has
// that size and the departing pods, terminating ones included, are gone.
func TestRemoveInstancesHolds(t *testing.T) {
	c := &Controller{}
	for _, tc := range []struct {
		name    string
		sts     int32
		highest int
		done    bool
	}{
		{"the set not applied at the held size yet", 3, 2, false},
		{"a departing pod still terminating", 1, 2, false},
		{"the departing pods gone", 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: gpssv1.GpssClusterSpec{Replicas: 1}}
			op := commonv1.NewOperation(flowScaleIn, "t", []string{stepRecordJobs, stepStopJobs, stepRemoveInstances, stepStartJobs}, metav1.Now())
			g.Status.Operation = op
			cl := &cluster{highestPod: tc.highest, sts: &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(tc.sts)}}}
			done, err := c.removeInstances(&Context{Context: t.Context(), Obj: g, Log: logr.Discard()}, cl)
			if err != nil || done != tc.done {
				t.Errorf("removeInstances = %t, %v; want %t, nil", done, err, tc.done)
			}
			if held, ok := op.HeldReplicas("g"); !ok || held != 1 {
				t.Errorf("held %d, %t; want 1, true", held, ok)
			}
		})
	}
}

// TestInErrorSinceRecorded checks which jobs in error the start-jobs step
// takes over: neither in error when the scale-in began nor recorded as
// stopped by it.
func TestInErrorSinceRecorded(t *testing.T) {
	const (
		run  = job.JobStatusCode_JOB_RUNNING
		stop = job.JobStatusCode_JOB_STOPPED
		fail = job.JobStatusCode_JOB_ERROR
	)
	for _, tc := range []struct {
		name           string
		stopped, prior []string
		codes          map[string]job.JobStatusCode
		want           []string
	}{
		{"nothing in error", []string{"a"}, nil, map[string]job.JobStatusCode{"a": run, "b": stop}, nil},
		{"a job started during the flow, on an instance gone since", []string{"a"}, nil,
			map[string]job.JobStatusCode{"a": stop, "late": fail}, []string{"late"}},
		{"in error before the flow: left alone", nil, []string{"old"},
			map[string]job.JobStatusCode{"old": fail, "late": fail}, []string{"late"}},
		{"a stopped job in error: already recorded", []string{"a"}, nil,
			map[string]job.JobStatusCode{"a": fail}, nil},
		{"sorted", nil, nil, map[string]job.JobStatusCode{"c": fail, "a": fail, "b": fail}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &gpssv1.GpssClusterStatus{StoppedJobs: tc.stopped, JobsInErrorBeforeScaleIn: tc.prior}
			if got := inErrorSinceRecorded(st, tc.codes); !slices.Equal(got, tc.want) {
				t.Errorf("inErrorSinceRecorded = %v, want %v", got, tc.want)
			}
		})
	}
}
