package gpss_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestScaleInMovesTheJobs scales a cluster of three simulated instances with
// four running jobs in to one: the jobs are stopped, the remove-instances
// step holds the StatefulSet at one instance, the departing instances go
// (the test plays the StatefulSet controller), and the same jobs run
// again, each on the instance that stays.
func TestScaleInMovesTheJobs(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	sims := []*gpsstest.Simulator{
		gpsstest.RunSimulator(t, etcd, "c-sc", "sc-0", simulator.Knobs{}),
		gpsstest.RunSimulator(t, etcd, "c-sc", "sc-1", simulator.Knobs{}),
		gpsstest.RunSimulator(t, etcd, "c-sc", "sc-2", simulator.Knobs{}),
	}
	// Instance 0 stays.
	c, ns := setup(t, through(sims...))

	g := newCluster(ns, "sc", func(s *gpssv1.GpssClusterSpec) {
		s.ClusterID = "c-sc"
		s.Etcd.Endpoints = []string{etcd}
	})
	if err := c.Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the instances' StatefulSet", func() (bool, string) { return exists(t, c, ns, "sc", sts), "not yet" })
	markReady(t, c, sts, true)
	testenv.Eventually(t, "Ready", func() (bool, string) { return ready(cluster(t, c, ns, "sc")) })

	jobs := job.NewJobServiceClient(gpsstest.Dial(t, sims[1].GRPCAddr))
	names := map[string]bool{}
	for i := range 4 {
		resp, err := jobs.SubmitJob(t.Context(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: fmt.Sprintf("j%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		names[resp.GetJobName()] = true
		if _, err := jobs.StartJob(t.Context(), &job.StartJobRequest{JobIdentifier: &job.JobIdentifier{Unit: &job.JobIdentifier_JobId{JobId: resp.GetJobId()}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A fifth job, submitted and never started, stays stopped.
	if _, err := jobs.SubmitJob(t.Context(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: "idle"}}); err != nil {
		t.Fatal(err)
	}
	before := gpsstest.JobOwners(t, etcd, "c-sc")
	if len(before) != 4 {
		t.Fatalf("owners before: %v", before)
	}

	if err := c.Patch(t.Context(), cluster(t, c, ns, "sc"), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	// Play the StatefulSet controller: once the StatefulSet shrinks, the
	// departing pods and their instances go.
	testenv.Eventually(t, "the StatefulSet shrinks to 1 after the jobs stopped", func() (bool, string) {
		exists(t, c, ns, "sc", sts)
		if *sts.Spec.Replicas != 1 {
			return false, fmt.Sprintf("%d replicas", *sts.Spec.Replicas)
		}
		return true, ""
	})
	if owners := gpsstest.JobOwners(t, etcd, "c-sc"); len(owners) != 0 {
		t.Errorf("the StatefulSet shrank while jobs still ran: %v", owners)
	}
	// The step that removes the instances decided the size, and says so;
	// it waits for the departing pods to go.
	if op := cluster(t, c, ns, "sc").Status.Operation; op == nil || op.Step != "remove-instances" ||
		len(op.Held) != 1 || op.Held[0] != (commonv1.HeldReplicas{Workload: "sc", Replicas: 1}) {
		t.Errorf("operation %+v; want remove-instances holding sc at 1 while the departing pods run", op)
	}
	for i := 1; i < 3; i++ {
		sims[i].Stop()
		if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sc-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the scale-in succeeds", func() (bool, string) {
		op := cluster(t, c, ns, "sc").Status.Operation
		return op != nil && op.Name == "scale-in" && op.Phase == commonv1.PhaseSucceeded, fmt.Sprintf("%+v", op)
	})
	after := gpsstest.JobOwners(t, etcd, "c-sc")
	if len(after) != 4 {
		t.Errorf("%d jobs run after the scale-in, want the 4 that ran before: %v", len(after), after)
	}
	for name, owner := range after {
		if !names[name] || owner != "sc-0" {
			t.Errorf("job %s runs on %s after the scale-in, want sc-0 (and only the jobs that ran before)", name, owner)
		}
	}
	testenv.Eventually(t, "status.jobs counts the jobs as ListJobs lists them", func() (bool, string) {
		j := cluster(t, c, ns, "sc").Status.Jobs
		return j != nil && j.Running == 4 && j.Stopped == 1 && j.Error == 0, fmt.Sprintf("%+v", j)
	})
	st := cluster(t, c, ns, "sc").Status
	if len(st.StoppedJobs) != 0 {
		t.Errorf("status.stoppedJobs = %v after the jobs started again", st.StoppedJobs)
	}
	for i := 1; i < 3; i++ {
		if exists(t, c, ns, fmt.Sprintf("sc-%d-gpfdist", i), &corev1.Service{}) {
			t.Errorf("the gpfdist Service of departed instance %d is still there", i)
		}
	}
	list, err := job.NewJobServiceClient(gpsstest.Dial(t, sims[0].GRPCAddr)).ListJobs(t.Context(), &job.ListJobRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range list.GetJobInfos() {
		want := job.JobStatusCode_JOB_RUNNING
		if info.GetName() == "idle" {
			want = job.JobStatusCode_JOB_STOPPED
		}
		if info.GetStatus().GetCode() != want {
			t.Errorf("job %s is %v, want %v", info.GetName(), info.GetStatus().GetCode(), want)
		}
	}
}
