package gpss_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/gpss"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
	"github.com/stewardhq/steward/internal/gpss/gpssconfig"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
	"github.com/stewardhq/steward/internal/testenv"
)

// These tests run the GpssCluster controller in a manager against a real
// kube-apiserver (envtest), with no kubelet and no StatefulSet controller:
// the tests play those parts where the controller waits for them.

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(gpssv1.AddToScheme(s))
	return s
}

// setup gives a test a client and a namespace of its own, with the
// controller running on it (opts; Resync defaults to a second).
func setup(t *testing.T, opts ...gpss.Options) (client.Client, string) {
	t.Helper()
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "gpss-test-")
	mgr := testenv.NamespacedManager(t, cfg, newScheme(), ns, 0)
	o := gpss.Options{Resync: time.Second}
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := gpss.Setup(mgr, o); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	return c, ns
}

// reachThrough is a Dialer that reaches every cluster's job API through the
// simulated instance sim, as the controller would through the gRPC
// Service.
func reachThrough(sim *gpsstest.Simulator) gpss.Dialer {
	return func(context.Context, *gpssv1.GpssCluster) (job.JobServiceClient, func(), error) {
		conn, err := grpc.NewClient(sim.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, nil, err
		}
		return job.NewJobServiceClient(conn), func() { _ = conn.Close() }, nil
	}
}

// through returns options that reach the cluster's job API through sims[0]
// and instance i through sims[i] (sims[0] when there are fewer): the
// simulated instances stand for the pods, which have no address here.
func through(sims ...*gpsstest.Simulator) gpss.Options {
	return gpss.Options{Resync: time.Second, Dial: reachThrough(sims[0]),
		InstanceAddress: func(_ *gpssv1.GpssCluster, p *corev1.Pod) string {
			i, _ := strconv.Atoi(p.Name[strings.LastIndex(p.Name, "-")+1:])
			if i >= len(sims) {
				i = 0
			}
			return sims[i].GRPCAddr
		}}
}

func newCluster(ns, name string, mutate ...func(*gpssv1.GpssClusterSpec)) *gpssv1.GpssCluster {
	g := &gpssv1.GpssCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gpssv1.GpssClusterSpec{Image: "gpss:2.0", ClusterID: "c-" + name, Replicas: 3}}
	for _, m := range mutate {
		m(&g.Spec)
	}
	return g
}

func exists(t *testing.T, c client.Client, ns, name string, obj client.Object) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

func cluster(t *testing.T, c client.Client, ns, name string) *gpssv1.GpssCluster {
	t.Helper()
	g := &gpssv1.GpssCluster{}
	if !exists(t, c, ns, name, g) {
		t.Fatalf("%s is gone", name)
	}
	return g
}

func ready(g *gpssv1.GpssCluster) (bool, string) {
	cond := meta.FindStatusCondition(g.Status.Conditions, framework.ConditionReady)
	if cond == nil {
		return false, "no Ready condition"
	}
	return cond.Status == metav1.ConditionTrue, fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// markReady plays the StatefulSet controller and the kubelet: the
// StatefulSet's status says its pods are ready, and for the instances,
// ready pods exist on the StatefulSet's image.
func markReady(t *testing.T, c client.Client, sts *appsv1.StatefulSet, pods bool) {
	t.Helper()
	// The controller writes the StatefulSet and the pods' serving
	// condition concurrently: every write re-reads and retries on a
	// conflict, and a pod's conditions are set one by one, not replaced.
	err := retry.RetryOnConflict(testenv.ConflictBackoff, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), sts); err != nil {
			return err
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: *sts.Spec.Replicas,
			ReadyReplicas: *sts.Spec.Replicas, AvailableReplicas: *sts.Spec.Replicas,
			UpdateRevision: sts.Name + "-1", CurrentRevision: sts.Name + "-1"}
		return c.Status().Update(t.Context(), sts)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !pods {
		return
	}
	for i := range int(*sts.Spec.Replicas) {
		labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: sts.Status.UpdateRevision}
		maps.Copy(labels, sts.Spec.Template.Labels)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: fmt.Sprintf("%s-%d", sts.Name, i),
			Labels: labels, Annotations: sts.Spec.Template.Annotations}, Spec: *sts.Spec.Template.Spec.DeepCopy()}
		if err := c.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		err := retry.RetryOnConflict(testenv.ConflictBackoff, func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
			pod.Status.Conditions = append(pod.Status.Conditions,
				corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
			return c.Status().Update(t.Context(), pod)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreateWaitsForTheEtcdThenMakesTheInstances(t *testing.T) {
	simEtcd := gpsstest.StartEtcd(t)
	c, ns := setup(t, through(gpsstest.RunSimulator(t, simEtcd, "c-orders", "orders-sim", simulator.Knobs{})))
	g := newCluster(ns, "orders", func(s *gpssv1.GpssClusterSpec) {
		s.Config = &k8sruntime.RawExtension{Raw: []byte(`{"Logging":{"BackendLevel":"debug"}}`)}
		s.GpfdistService.Annotations = map[string]string{"lb.example/internal": "true"}
	})
	if err := c.Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	etcd := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the etcd's StatefulSet and Service", func() (bool, string) {
		return exists(t, c, ns, "orders-etcd", etcd) && exists(t, c, ns, "orders-etcd", &corev1.Service{}), "not yet"
	})
	testenv.Eventually(t, "Ready=False, waiting for the etcd", func() (bool, string) {
		cond := meta.FindStatusCondition(cluster(t, c, ns, "orders").Status.Conditions, framework.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == commonv1.ReasonCreating &&
			strings.Contains(cond.Message, "waiting for the etcd: 0 of 1 etcd members ready"), fmt.Sprintf("%+v", cond)
	})
	// The instances wait for the etcd: no StatefulSet, no config, no
	// gpfdist Service yet.
	time.Sleep(time.Second)
	if exists(t, c, ns, "orders", &appsv1.StatefulSet{}) || exists(t, c, ns, "orders-0-gpfdist", &corev1.Service{}) {
		t.Fatal("the instances were created before the etcd was ready")
	}
	if !exists(t, c, ns, "orders-grpc", &corev1.Service{}) || !exists(t, c, ns, "orders-gpss", &corev1.ServiceAccount{}) {
		t.Fatal("the gRPC Service and the ServiceAccount do not wait for the etcd, but are missing")
	}

	markReady(t, c, etcd, false)
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the instances' StatefulSet", func() (bool, string) {
		return exists(t, c, ns, "orders", sts), "not yet"
	})
	for i := range 3 {
		svc := &corev1.Service{}
		if !exists(t, c, ns, fmt.Sprintf("orders-%d-gpfdist", i), svc) {
			t.Fatalf("no gpfdist Service for instance %d", i)
		}
		if svc.Spec.Selector[appsv1.StatefulSetPodNameLabel] != fmt.Sprintf("orders-%d", i) || svc.Annotations["lb.example/internal"] != "true" {
			t.Errorf("gpfdist Service %d: %+v", i, svc)
		}
	}
	cm := &corev1.ConfigMap{}
	name := sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name
	if !exists(t, c, ns, name, cm) {
		t.Fatalf("no config ConfigMap %s", name)
	}
	cfg, err := gpssconfig.Parse([]byte(cm.Data[build.ConfigKey]))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.ID != "c-orders" || cfg.Cluster.Etcd.Endpoints[0] != "http://orders-etcd-0.orders-etcd."+ns+".svc.cluster.local:2379" {
		t.Errorf("gpss.json: %s", cm.Data[build.ConfigKey])
	}
	var raw map[string]map[string]any
	_ = json.Unmarshal([]byte(cm.Data[build.ConfigKey]), &raw)
	if raw["Logging"]["BackendLevel"] != "debug" {
		t.Errorf("the user's settings are missing: %s", cm.Data[build.ConfigKey])
	}

	markReady(t, c, sts, true)
	testenv.Eventually(t, "Ready", func() (bool, string) { return ready(cluster(t, c, ns, "orders")) })
	st := cluster(t, c, ns, "orders").Status
	if st.ReadyReplicas != 3 || len(st.Instances) != 3 || !st.Instances[2].Ready || st.Instances[2].Image != "gpss:2.0" ||
		st.CurrentImage != "gpss:2.0" || st.GRPCEndpoint != "orders-grpc."+ns+".svc.cluster.local:5000" ||
		st.Instances[0].GpfdistAddress != "orders-0-gpfdist."+ns+".svc.cluster.local:8080" || st.ConfigRevision != cm.Name {
		t.Errorf("status: %+v", st)
	}
}

func TestAnExistingEtcdIsNotWaitedFor(t *testing.T) {
	c, ns := setup(t)
	g := newCluster(ns, "ext", func(s *gpssv1.GpssClusterSpec) { s.Etcd.Endpoints = []string{"http://etcd.example:2379"} })
	if err := c.Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the instances' StatefulSet", func() (bool, string) {
		return exists(t, c, ns, "ext", &appsv1.StatefulSet{}), "not yet"
	})
	if exists(t, c, ns, "ext-etcd", &appsv1.StatefulSet{}) {
		t.Error("an etcd was made for a cluster that has one")
	}
	testenv.Eventually(t, "status.etcdEndpoints", func() (bool, string) {
		got := cluster(t, c, ns, "ext").Status.EtcdEndpoints
		return len(got) == 1 && got[0] == "http://etcd.example:2379", fmt.Sprint(got)
	})
}

func TestInvalidConfigIsReported(t *testing.T) {
	c, ns := setup(t)
	g := newCluster(ns, "bad", func(s *gpssv1.GpssClusterSpec) {
		s.Config = &k8sruntime.RawExtension{Raw: []byte(`{"Cluster":{"Id":"other"}}`)}
	})
	if err := c.Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "InvalidSpec naming the key", func() (bool, string) {
		cond := meta.FindStatusCondition(cluster(t, c, ns, "bad").Status.Conditions, framework.ConditionSynced)
		return cond != nil && cond.Reason == framework.ReasonInvalidSpec &&
			strings.Contains(cond.Message, "spec.config[Cluster][Id]: Forbidden: set by the operator from spec.clusterID"), fmt.Sprintf("%+v", cond)
	})
	if exists(t, c, ns, "bad-etcd", &appsv1.StatefulSet{}) {
		t.Error("children were made for an invalid spec")
	}
}

func TestDeleteReclaimsTheEtcdsVolumes(t *testing.T) {
	c, ns := setup(t)
	for _, policy := range []commonv1.ReclaimPolicy{commonv1.ReclaimRetain, commonv1.ReclaimDelete} {
		name := strings.ToLower(string(policy))
		g := newCluster(ns, name, func(s *gpssv1.GpssClusterSpec) {
			s.Etcd.Managed = &gpssv1.ManagedEtcd{Storage: commonv1.StorageSpec{ReclaimPolicy: policy}}
		})
		if err := c.Create(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the etcd", func() (bool, string) {
			return exists(t, c, ns, name+"-etcd", &appsv1.StatefulSet{}), "not yet"
		})
		// The StatefulSet controller would make the claim.
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-" + name + "-etcd-0",
			Labels: build.Selector(g, build.ComponentEtcd)},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceOf("1Gi")}}}}
		if err := c.Create(t.Context(), pvc); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(t.Context(), cluster(t, c, ns, name)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, name+" deleted", func() (bool, string) {
			return !exists(t, c, ns, name, &gpssv1.GpssCluster{}), "still there"
		})
		kept := &corev1.PersistentVolumeClaim{}
		gone := !exists(t, c, ns, pvc.Name, kept) || !kept.DeletionTimestamp.IsZero()
		if gone != (policy == commonv1.ReclaimDelete) {
			t.Errorf("reclaimPolicy %s: claim deleted = %v", policy, gone)
		}
	}
}

func resourceOf(s string) resource.Quantity { return resource.MustParse(s) }

// TestATakenClusterIDIsReported creates two clusters with one clusterID, as
// with the webhook off: the older is made, the newer reports the clash and
// makes nothing, and goes ahead once the older is gone.
func TestATakenClusterIDIsReported(t *testing.T) {
	c, ns := setup(t)
	first := newCluster(ns, "first", func(s *gpssv1.GpssClusterSpec) { s.ClusterID = "shared" })
	if err := c.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a second's grain
	if err := c.Create(t.Context(), newCluster(ns, "second", func(s *gpssv1.GpssClusterSpec) { s.ClusterID = "shared" })); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the second reports the clash", func() (bool, string) {
		cond := meta.FindStatusCondition(cluster(t, c, ns, "second").Status.Conditions, framework.ConditionSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse &&
			strings.Contains(cond.Message, `spec.clusterID: Duplicate value: "shared (GpssCluster first uses it)"`), fmt.Sprintf("%+v", cond)
	})
	if !exists(t, c, ns, "first-etcd", &appsv1.StatefulSet{}) || exists(t, c, ns, "second-etcd", &appsv1.StatefulSet{}) {
		t.Error("want the first cluster's etcd and none for the second")
	}
	if err := c.Delete(t.Context(), cluster(t, c, ns, "first")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the second goes ahead", func() (bool, string) {
		return exists(t, c, ns, "second-etcd", &appsv1.StatefulSet{}), "no etcd yet"
	})
}
