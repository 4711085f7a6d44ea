package zookeeper_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/testenv"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// The builders' objects are judged here, on the package's kube-apiserver,
// and not in internal/zookeeper/build: that package's tests stay pure, so
// that they compile and run in seconds with no API server (docs/testing.md).

// newDefaulted returns the defaulted cluster ns/zk with mutate applied to
// its spec first.
func newDefaulted(ns string, mutate func(*zkv1.ZookeeperClusterSpec)) *zkv1.ZookeeperCluster {
	zk := newCluster(ns, "zk", mutate)
	zkv1.Default(zk)
	return zk
}

// TestBuiltObjectsPassAPIValidation creates what the builders return
// (server-side dry run) on a real kube-apiserver, for a default and a
// fully customized cluster: the API server's validation is the judge of
// selectors, probes, claim templates and Service ports.
func TestBuiltObjectsPassAPIValidation(t *testing.T) {
	c, err := client.New(server.Config(t), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := testenv.Namespace(t, c, "built-")
	for _, tc := range []struct {
		name   string
		mutate func(*zkv1.ZookeeperClusterSpec)
	}{
		{"defaults", nil},
		{"custom", func(s *zkv1.ZookeeperClusterSpec) {
			s.Replicas = 5
			s.MaxUnavailable = ptr.To[int32](2)
			s.Storage = commonv1.StorageSpec{Size: ptr.To(resource.MustParse("10Gi")), StorageClassName: ptr.To("fast"), ReclaimPolicy: commonv1.ReclaimDelete}
			s.ClientService = zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30181)}
			s.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
			s.Tolerations = []corev1.Toleration{{Key: "zk", Operator: corev1.TolerationOpExists}}
			s.Config = map[string]string{"tickTime": "3000"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newDefaulted(ns, tc.mutate)
			data := build.ConfigData(zk)
			objs := []client.Object{
				build.HeadlessService(zk),
				build.ClientService(zk),
				build.PodDisruptionBudget(zk),
				build.StatefulSet(zk, zk.Spec.Replicas, "zk-config-0123456789", build.ConfigRevision(data)),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "zk-config-0123456789", Namespace: ns}, Data: data},
				build.MembersConfigMap(zk, build.Members(zk, build.IDs(zk.Spec.Replicas), ""), nil),
				build.CredentialsSecret(zk, "c2VjcmV0LXBhc3N3b3JkLTEyMzQ1Njc4OTA"),
			}
			for _, obj := range objs {
				if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
					t.Errorf("%T %s: %v", obj, obj.GetName(), err)
				}
			}
		})
	}
}

// TestSourcesNameTheAPIServersFields gives each source of the children's
// fields an invalid value through the spec and dry-runs the children: the
// API server's error must be on a field under that source's child path,
// so that admission names the spec field it maps to.
func TestSourcesNameTheAPIServersFields(t *testing.T) {
	c, err := client.New(server.Config(t), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := testenv.Namespace(t, c, "sources-")
	const bad = "bad key!"
	for _, tc := range []struct {
		spec   string // the spec field the error must map to
		mutate func(*zkv1.ZookeeperClusterSpec)
	}{
		{"spec.nodeSelector", func(s *zkv1.ZookeeperClusterSpec) { s.NodeSelector = map[string]string{bad: "x"} }},
		{"spec.tolerations", func(s *zkv1.ZookeeperClusterSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Sometimes"}}
		}},
		{"spec.topologySpreadConstraints", func(s *zkv1.ZookeeperClusterSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}},
		{"spec.affinity", func(s *zkv1.ZookeeperClusterSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}},
		{"spec.priorityClassName", func(s *zkv1.ZookeeperClusterSpec) { s.PriorityClassName = "Not A Name" }},
		{"spec.resources", func(s *zkv1.ZookeeperClusterSpec) {
			s.Resources.Limits = corev1.ResourceList{"example.com/bad key": resource.MustParse("1")}
		}},
		{"spec.storage.size", func(s *zkv1.ZookeeperClusterSpec) { s.Storage.Size = ptr.To(resource.MustParse("0")) }},
		{"spec.clientService.annotations", func(s *zkv1.ZookeeperClusterSpec) { s.ClientService.Annotations = map[string]string{bad: "x"} }},
		{"spec.imagePullPolicy", func(s *zkv1.ZookeeperClusterSpec) { s.ImagePullPolicy = "Sometimes" }},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			zk := newDefaulted(ns, tc.mutate)
			data := build.ConfigData(zk)
			for _, child := range []struct {
				obj     client.Object
				sources map[string]string
			}{
				{build.ClientService(zk), build.ClientServiceSources},
				{build.PodDisruptionBudget(zk), build.PodDisruptionBudgetSources},
				{build.StatefulSet(zk, zk.Spec.Replicas, build.ConfigMapName(zk, data), build.ConfigRevision(data)), build.StatefulSetSources},
			} {
				err := c.Create(ctx, child.obj, client.DryRunAll)
				if err == nil {
					continue
				}
				status, ok := err.(apierrors.APIStatus)
				if !ok || status.Status().Details == nil {
					t.Fatalf("%T: %v, want a status with causes", child.obj, err)
				}
				for _, cause := range status.Status().Details.Causes {
					// The longest source that ends at a field or index
					// boundary, as the framework maps them.
					best, mapped := "", ""
					for prefix, spec := range child.sources {
						rest, ok := strings.CutPrefix(cause.Field, prefix)
						if ok && len(prefix) > len(best) && (rest == "" || rest[0] == '.' || rest[0] == '[') {
							best, mapped = prefix, spec
						}
					}
					if mapped != tc.spec {
						t.Errorf("%T: the error on %s maps to %q, want %s: %s", child.obj, cause.Field, mapped, tc.spec, cause.Message)
					}
				}
				return
			}
			t.Errorf("no child was rejected")
		})
	}
}
