package gpss_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
	"github.com/stewardhq/steward/internal/testenv"
)

// simInstance is a GPSS simulator standing in for one instance's pod.
type simInstance struct {
	addr string
	stop func()
}

func runSimulator(t *testing.T, etcd, clusterID, name string) *simInstance {
	t.Helper()
	cfg := fmt.Sprintf(`{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Id":%q,"Etcd":{"Endpoints":[%q]}}}`, clusterID, etcd)
	s, err := simulator.New([]byte(cfg), name, simulator.Knobs{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := net.Listen("tcp", "127.0.0.1:0")
	f, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, g, f) }()
	in := &simInstance{addr: g.Addr().String()}
	stopped := false
	in.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("simulator %s: %v", name, err)
			}
		}
	}
	t.Cleanup(in.stop)
	return in
}

func jobClient(t *testing.T, addr string) job.JobServiceClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return job.NewJobServiceClient(conn)
}

// jobOwners reads which instance runs each running job from the
// simulator's own etcd keys (no GPSS API says it): a test-only view.
func jobOwners(t *testing.T, etcd, clusterID string) map[string]string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prefix := simulator.Root + "/" + clusterID + "/owners/"
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out
}

// TestScaleInMovesTheJobs scales a cluster of three simulated instances with
// four running jobs in to one: the jobs are stopped, the departing
// instances go (the test plays the StatefulSet controller), and the same
// jobs run again, each on the instance that stays.
func TestScaleInMovesTheJobs(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "gpss-scale-")
	sims := []*simInstance{runSimulator(t, etcd, "c-sc", "sc-0"), runSimulator(t, etcd, "c-sc", "sc-1"), runSimulator(t, etcd, "c-sc", "sc-2")}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: newScheme(), Logger: testenv.Logger(t, 0),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The controller reaches the cluster through instance 0, which stays,
	// as it would through the gRPC Service.
	dial := func(context.Context, *gpssv1.GpssCluster) (job.JobServiceClient, func(), error) {
		conn, err := grpc.NewClient(sims[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, nil, err
		}
		return job.NewJobServiceClient(conn), func() { _ = conn.Close() }, nil
	}
	if err := gpss.Setup(mgr, gpss.Options{Resync: time.Second, Dial: dial}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)

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

	jobs := jobClient(t, sims[1].addr)
	ids := map[string]bool{}
	for i := range 4 {
		resp, err := jobs.SubmitJob(t.Context(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: fmt.Sprintf("j%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids[resp.GetJobId()] = true
		if _, err := jobs.StartJob(t.Context(), &job.StartJobRequest{JobIdentifier: &job.JobIdentifier{Unit: &job.JobIdentifier_JobId{JobId: resp.GetJobId()}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A fifth job, submitted and never started, stays stopped.
	if _, err := jobs.SubmitJob(t.Context(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: "idle"}}); err != nil {
		t.Fatal(err)
	}
	before := jobOwners(t, etcd, "c-sc")
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
	if owners := jobOwners(t, etcd, "c-sc"); len(owners) != 0 {
		t.Errorf("the StatefulSet shrank while jobs still ran: %v", owners)
	}
	for i := 1; i < 3; i++ {
		sims[i].stop()
		if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sc-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the scale-in succeeds", func() (bool, string) {
		op := cluster(t, c, ns, "sc").Status.Operation
		return op != nil && op.Name == "scale-in" && op.Phase == commonv1.PhaseSucceeded, fmt.Sprintf("%+v", op)
	})
	after := jobOwners(t, etcd, "c-sc")
	if len(after) != 4 {
		t.Errorf("%d jobs run after the scale-in, want the 4 that ran before: %v", len(after), after)
	}
	for id, owner := range after {
		if !ids[id] || owner != "sc-0" {
			t.Errorf("job %s runs on %s after the scale-in, want sc-0 (and only the jobs that ran before)", id, owner)
		}
	}
	st := cluster(t, c, ns, "sc").Status
	if len(st.StoppedJobs) != 0 {
		t.Errorf("status.stoppedJobs = %v after the jobs started again", st.StoppedJobs)
	}
	for i := 1; i < 3; i++ {
		if exists(t, c, ns, fmt.Sprintf("sc-%d-gpfdist", i), &corev1.Service{}) {
			t.Errorf("the gpfdist Service of departed instance %d is still there", i)
		}
	}
	list, err := jobClient(t, sims[0].addr).ListJobs(t.Context(), &job.ListJobRequest{})
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
