package gpss

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

func TestJobsStatus(t *testing.T) {
	now := time.Now()
	answer := func(at time.Time, codes map[string]job.JobStatusCode) probe.Result[instanceAnswer] {
		return probe.Result[instanceAnswer]{Value: instanceAnswer{codes: codes}, At: at, ValueAt: at}
	}
	many := map[string]job.JobStatusCode{}
	for i := range 12 {
		many[fmt.Sprintf("j%02d", i)] = job.JobStatusCode_JOB_ERROR
	}
	old := answer(now.Add(-time.Minute), map[string]job.JobStatusCode{"a": job.JobStatusCode_JOB_RUNNING})
	fresh := answer(now.Add(-time.Second), map[string]job.JobStatusCode{
		"a": job.JobStatusCode_JOB_ERROR, "b": job.JobStatusCode_JOB_RUNNING, "c": job.JobStatusCode_JOB_STOPPED})
	failing := probe.Result[instanceAnswer]{Err: fmt.Errorf("refused"), At: now}

	if st := jobsStatus(map[int]probe.Result[instanceAnswer]{0: old, 1: failing}, now); st != nil {
		t.Errorf("no answer within %s: %+v, want none", servingMaxAge, st)
	}
	st := jobsStatus(map[int]probe.Result[instanceAnswer]{0: old, 1: fresh, 2: failing}, now)
	if st == nil || st.Running != 1 || st.Stopped != 1 || st.Error != 1 || !slices.Equal(st.InError, []string{"a"}) {
		t.Errorf("the freshest answer: %+v, want 1 running, 1 stopped, a in error", st)
	}
	st = jobsStatus(map[int]probe.Result[instanceAnswer]{0: answer(now, many)}, now)
	if st == nil || st.Error != 12 || len(st.InError) != maxJobsInError || st.InError[0] != "j00" {
		t.Errorf("12 in error: %+v, want the count and the first %d names", st, maxJobsInError)
	}
}

// TestNotReadyWhileJobsStopped checks that a cluster whose instances all
// serve is not Ready while jobs a scale-in stopped do not run again (they
// stopped for 20 s while the cluster said Ready), and that it says so.
func TestNotReadyWhileJobsStopped(t *testing.T) {
	g := &Cluster{}
	g.Spec.Replicas, g.Spec.Image = 1, "gpss:1"
	g.Status.StoppedJobs = []string{"a", "b"}
	sts := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.StatefulSetStatus{UpdateRevision: "r1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "g-0", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "r1"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: build.ServingCondition, Status: corev1.ConditionTrue}}}}
	cl := &cluster{sts: sts, pods: map[int]*corev1.Pod{0: pod}, etcdReady: true}
	if reason, msg := notReady(g, cl); reason != commonv1.ReasonScaling || msg != "2 jobs stopped for a scale-in do not run again yet" {
		t.Errorf("with stopped jobs: %s %q, want Scaling and why", reason, msg)
	}
	g.Status.StoppedJobs = nil
	if reason, msg := notReady(g, cl); reason != "" {
		t.Errorf("once they run: %s %q, want Ready", reason, msg)
	}
}
