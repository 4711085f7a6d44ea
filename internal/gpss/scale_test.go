package gpss_test

import (
	"fmt"
	"maps"
	"slices"
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

	sts := createOnEtcd(t, c, ns, "sc", "c-sc", etcd)
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
	departAndSucceed(t, c, ns, "sc", sims)
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
	expectRunning(t, job.NewJobServiceClient(gpsstest.Dial(t, sims[0].GRPCAddr)), map[string]job.JobStatusCode{"idle": job.JobStatusCode_JOB_STOPPED})
}

// TestAJobStartedDuringAScaleInRunsAfterItSeed20261203 is the chaos suite's
// seed 20261203 (GPSS steps 17 and 21): a client started a job while a
// scale-in ran, after the flow had stopped the running jobs, and GPSS gave
// it to a departing instance, which had none left to run. The instance
// went, the job went to JOB_ERROR, and the flow, which knew only the jobs
// it had stopped, left it there. Here a cluster of three scales in to one;
// once the jobs are stopped a client starts two jobs, one of which the
// departing instance sc-1 takes. After the flow every job that ran or was
// started runs on sc-0, and a job that was in error before the scale-in
// (its instance, outside the cluster, gone) is left in error.
func TestAJobStartedDuringAScaleInRunsAfterItSeed20261203(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	// The simulator gives a job to the least loaded instance, the lowest
	// named among equals: "a-old" takes the first job, then sc-0.
	old := gpsstest.RunSimulator(t, etcd, "c-sj", "a-old", simulator.Knobs{})
	sims := []*gpsstest.Simulator{
		gpsstest.RunSimulator(t, etcd, "c-sj", "sj-0", simulator.Knobs{}),
		gpsstest.RunSimulator(t, etcd, "c-sj", "sj-1", simulator.Knobs{}),
		gpsstest.RunSimulator(t, etcd, "c-sj", "sj-2", simulator.Knobs{}),
	}
	c, ns := setup(t, through(sims...))
	jobs := job.NewJobServiceClient(gpsstest.Dial(t, sims[0].GRPCAddr))
	startJob := func(name, owner string) {
		t.Helper()
		resp, err := jobs.SubmitJob(t.Context(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jobs.StartJob(t.Context(), &job.StartJobRequest{JobIdentifier: &job.JobIdentifier{Unit: &job.JobIdentifier_JobId{JobId: resp.GetJobId()}}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "job "+name+" runs on "+owner, func() (bool, string) {
			owners := gpsstest.JobOwners(t, etcd, "c-sj")
			return owners[name] == owner, fmt.Sprintf("owners %v", owners)
		})
	}
	startJob("failed", "a-old")
	old.Stop()
	startJob("before", "sj-0")

	sts := createOnEtcd(t, c, ns, "sj", "c-sj", etcd)
	testenv.Eventually(t, "Ready", func() (bool, string) {
		g := cluster(t, c, ns, "sj")
		return g.Status.Jobs != nil && g.Status.Jobs.Running == 1 && g.Status.Jobs.Error == 1, fmt.Sprintf("%+v", g.Status.Jobs)
	})

	if err := c.Patch(t.Context(), cluster(t, c, ns, "sj"), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the StatefulSet shrinks to 1 after the jobs stopped", func() (bool, string) {
		exists(t, c, ns, "sj", sts)
		return *sts.Spec.Replicas == 1, fmt.Sprintf("%d replicas", *sts.Spec.Replicas)
	})
	if st := cluster(t, c, ns, "sj").Status; !slices.Equal(st.StoppedJobs, []string{jobID(t, jobs, "before")}) ||
		!slices.Equal(st.JobsInErrorBeforeScaleIn, []string{jobID(t, jobs, "failed")}) {
		t.Errorf("status.stoppedJobs %v, status.jobsInErrorBeforeScaleIn %v; want the job that ran and the one in error", st.StoppedJobs, st.JobsInErrorBeforeScaleIn)
	}
	// A client starts two jobs while the departing instances still run:
	// the second goes to sj-1, which is leaving.
	startJob("pin", "sj-0")
	startJob("late", "sj-1")
	departAndSucceed(t, c, ns, "sj", sims)
	want := map[string]string{"failed": "a-old", "before": "sj-0", "pin": "sj-0", "late": "sj-0"}
	if owners := gpsstest.JobOwners(t, etcd, "c-sj"); !maps.Equal(owners, want) {
		t.Errorf("owners after the scale-in %v, want %v", owners, want)
	}
	expectRunning(t, jobs, map[string]job.JobStatusCode{"failed": job.JobStatusCode_JOB_ERROR})
	if st := cluster(t, c, ns, "sj").Status; len(st.StoppedJobs) != 0 || len(st.JobsInErrorBeforeScaleIn) != 0 {
		t.Errorf("status.stoppedJobs %v, status.jobsInErrorBeforeScaleIn %v after the flow; want both cleared", st.StoppedJobs, st.JobsInErrorBeforeScaleIn)
	}
}

// jobID returns the id of the job named name.
func jobID(t *testing.T, jobs job.JobServiceClient, name string) string {
	t.Helper()
	list, err := jobs.ListJobs(t.Context(), &job.ListJobRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range list.GetJobInfos() {
		if info.GetName() == name {
			return info.GetId()
		}
	}
	t.Fatalf("no job %s", name)
	return ""
}

// createOnEtcd creates a cluster of three instances named name, with
// clusterID, on the etcd at etcd, waits for its instances' StatefulSet and
// marks it and its pods ready (the test plays the StatefulSet controller).
func createOnEtcd(t *testing.T, c client.Client, ns, name, clusterID, etcd string) *appsv1.StatefulSet {
	t.Helper()
	g := newCluster(ns, name, func(s *gpssv1.GpssClusterSpec) {
		s.ClusterID = clusterID
		s.Etcd.Endpoints = []string{etcd}
	})
	if err := c.Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the instances' StatefulSet", func() (bool, string) { return exists(t, c, ns, name, sts), "not yet" })
	markReady(t, c, sts, true)
	return sts
}

// expectRunning checks that every job ListJobs lists runs, but those of
// except, which are in the state it gives.
func expectRunning(t *testing.T, jobs job.JobServiceClient, except map[string]job.JobStatusCode) {
	t.Helper()
	list, err := jobs.ListJobs(t.Context(), &job.ListJobRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range list.GetJobInfos() {
		want, ok := except[info.GetName()]
		if !ok {
			want = job.JobStatusCode_JOB_RUNNING
		}
		if info.GetStatus().GetCode() != want {
			t.Errorf("job %s is %v, want %v", info.GetName(), info.GetStatus().GetCode(), want)
		}
	}
}

// departAndSucceed plays the StatefulSet controller for a scale-in of
// cluster name to one instance: instances 1 and up stop and their pods go;
// then it waits for the flow to succeed.
func departAndSucceed(t *testing.T, c client.Client, ns, name string, sims []*gpsstest.Simulator) {
	t.Helper()
	for i := 1; i < len(sims); i++ {
		sims[i].Stop()
		if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the scale-in succeeds", func() (bool, string) {
		op := cluster(t, c, ns, name).Status.Operation
		return op != nil && op.Name == "scale-in" && op.Phase == commonv1.PhaseSucceeded, fmt.Sprintf("%+v", op)
	})
}
