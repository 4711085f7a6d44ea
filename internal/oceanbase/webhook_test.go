package oceanbase_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/testenv"
)

// The cluster controller has the admission hooks of the other systems.
var (
	_ framework.Validator[*oceanbase.Cluster]     = (*oceanbase.Controller)(nil)
	_ framework.ChildRenderer[*oceanbase.Cluster] = (*oceanbase.Controller)(nil)
	_ framework.ClashChecker[*oceanbase.Cluster]  = (*oceanbase.Controller)(nil)
)

// hookServer is a kube-apiserver with the webhook configurations of
// config (make manifests) installed, pointed at a webhook server the test
// runs. Its webhooks fail closed: only the test that serves them writes
// there.
var hookServer = testenv.APIServer{
	CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	WebhookPaths:      []string{filepath.Join("..", "..", "charts", "steward", "files", "manifests.yaml")},
}

// obCluster returns a defaulted cluster named name whose spec modify
// changed first.
func obCluster(name string, modify func(s *obv1.OBClusterSpec)) *oceanbase.Cluster {
	ob := &oceanbase.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}}}}
	if modify != nil {
		modify(&ob.Spec)
	}
	oceanbase.New(oceanbase.Options{}).Default(ob)
	return ob
}

// fields returns the fields of the field errors err is made of.
func fields(err error) []string {
	var out []string
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) {
				out = append(out, fe.Field)
			}
		}
		return out
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		out = append(out, fe.Field)
	}
	return out
}

func TestValidateCluster(t *testing.T) {
	long := strings.Repeat("a", 30)
	for _, tc := range []struct {
		name   string
		obName string
		modify func(s *obv1.OBClusterSpec)
		want   []string // the fields refused; none: valid
	}{
		{"defaults", "ob", nil, nil},
		{"a bad image", "ob", func(s *obv1.OBClusterSpec) { s.Image = "Not An Image" }, []string{"spec.image"}},
		{"requests above limits", "ob", func(s *obv1.OBClusterSpec) {
			s.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		}, []string{"spec.resources.requests.memory"}},
		{"zone names at the limit", long[:25], func(s *obv1.OBClusterSpec) {
			s.Zones = []obv1.OBZoneSpec{{Name: long[:26]}} // a StatefulSet name of 52 characters
		}, nil},
		{"a zone name that makes the StatefulSet's name too long", long[:25], func(s *obv1.OBClusterSpec) {
			s.Zones = []obv1.OBZoneSpec{{Name: "z1"}, {Name: long[:27]}}
		}, []string{"spec.zones[1].name"}},
		{"credentials that no Secret can be named", "ob", func(s *obv1.OBClusterSpec) {
			s.Credentials = obv1.Credentials{Root: "Root_Secret", Operator: "op/x"}
		}, []string{"spec.credentials.root", "spec.credentials.operator"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fields(oceanbase.New(oceanbase.Options{}).Validate(obCluster(tc.obName, tc.modify)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("refused %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateTenantSecret(t *testing.T) {
	for name, valid := range map[string]bool{"": true, "t-root": true, "T_root": false} {
		tenant := &oceanbase.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"}, Spec: obv1.OBTenantSpec{
			Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}}, RootPassword: name,
			Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("1Gi")},
		}}
		c := oceanbase.NewTenantController(oceanbase.Options{})
		c.Default(tenant)
		got := fields(c.Validate(tenant))
		if want := []string{"spec.rootPassword"}; valid && len(got) > 0 || !valid && !slices.Equal(got, want) {
			t.Errorf("rootPassword %q: refused %q, want valid %v", name, got, valid)
		}
	}
}

func TestClusterClashes(t *testing.T) {
	stored := func(name string, created int64, zones ...string) *obv1.OBCluster {
		ob := obCluster(name, func(s *obv1.OBClusterSpec) {
			s.Zones = nil
			for _, z := range zones {
				s.Zones = append(s.Zones, obv1.OBZoneSpec{Name: z})
			}
		})
		if created > 0 {
			ob.CreationTimestamp = metav1.Unix(created, 0)
		}
		return ob
	}
	for _, tc := range []struct {
		name   string
		others []*obv1.OBCluster
		obj    *obv1.OBCluster // a create unless it has a creation time
		want   string          // the field refused; "" admits
	}{
		{"alone", nil, stored("a", 0, "z1"), ""},
		{"distinct names", []*obv1.OBCluster{stored("b", 1, "z1")}, stored("a", 0, "z1"), ""},
		{"its client Service is another's headless Service", []*obv1.OBCluster{stored("a", 1, "z1")},
			stored("a-observers", 0, "z1"), "metadata.name"},
		{"its headless Service is another's client Service", []*obv1.OBCluster{stored("a-observers", 1, "z1")},
			stored("a", 0, "z1"), "metadata.name"},
		{"its zone's server Services are another's client Service", []*obv1.OBCluster{stored("a-z1-15", 1, "z1")},
			stored("a", 0, "z1"), "spec.zones[0].name"},
		{"the older keeps its names", []*obv1.OBCluster{stored("a", 5, "z1")}, stored("a-observers", 1, "z1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(newScheme())
			for _, o := range tc.others {
				b = b.WithObjects(o)
			}
			err := oceanbase.New(oceanbase.Options{}).Clashes(t.Context(), b.Build(), tc.obj)
			got := ""
			if f := fields(err); len(f) > 0 {
				got = f[0]
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Clashes = %v, want a refusal of %q", err, tc.want)
			}
		})
	}
}

// TestWebhooksOnAPIServer writes invalid OBClusters through a real
// kube-apiserver that calls the system's webhooks, as kubectl would: each
// is refused with a 422 whose message names the spec field. The embedded
// Kubernetes fields are refused by the API server's dry run of the
// children RenderChildren renders.
func TestWebhooksOnAPIServer(t *testing.T) {
	c := hookServer.WebhookClient(t, newScheme(), oceanbase.SetupWebhooks)
	ns := testenv.Namespace(t, c, "ob-webhooks-")
	placement := func(modify func(p *commonv1.PodPlacement)) func(s *obv1.OBClusterSpec) {
		return func(s *obv1.OBClusterSpec) { modify(&s.Placement) }
	}
	for _, tc := range []struct {
		name   string
		modify func(s *obv1.OBClusterSpec)
		field  string // in the message, as the first cause's field
	}{
		{"a node selector key", placement(func(p *commonv1.PodPlacement) { p.NodeSelector = map[string]string{"bad key!": "x"} }),
			"spec.placement.nodeSelector"},
		{"a toleration effect", placement(func(p *commonv1.PodPlacement) {
			p.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "Sometimes"}}
		}), "spec.placement.tolerations[0].effect"},
		{"an affinity operator", placement(func(p *commonv1.PodPlacement) {
			p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: "Near", Values: []string{"v"}}}}},
			}}}
		}), "spec.placement.affinity.nodeAffinity"},
		{"a zone's topology spread with maxSkew 0", func(s *obv1.OBClusterSpec) {
			s.Zones[1].Placement = &commonv1.PodPlacement{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			}}}
		}, "spec.zones[1].placement.topologySpreadConstraints[0].maxSkew"},
		{"a negative quantity", func(s *obv1.OBClusterSpec) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, "spec.resources.limits[cpu]"},
		{"requests above limits", func(s *obv1.OBClusterSpec) {
			s.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}, "spec.resources.requests.cpu"},
		{"a storage class name", func(s *obv1.OBClusterSpec) { s.Storage.StorageClassName = ptr.To("Fast_SSD") },
			"spec.storage.storageClassName"},
		{"a zone name too long for its children", func(s *obv1.OBClusterSpec) {
			s.Zones[0].Name = strings.Repeat("z", 32)
		}, "spec.zones[0].name"},
		{"a credentials Secret name", func(s *obv1.OBClusterSpec) { s.Credentials.Root = "Root" }, "spec.credentials.root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := &oceanbase.Cluster{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("c", 22), Namespace: ns},
				Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}}}}
			tc.modify(&ob.Spec)
			err := c.Create(t.Context(), ob)
			requireInvalid(t, err, "vobcluster.steward.dev", tc.field)
		})
	}

	t.Run("a cluster whose Services another cluster has", func(t *testing.T) {
		first := &oceanbase.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns},
			Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}}}}
		if err := c.Create(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		second := first.DeepCopy()
		second.ObjectMeta = metav1.ObjectMeta{Name: "a-observers", Namespace: ns}
		// Dry runs until the webhook's cache has the first cluster.
		testenv.Eventually(t, "the clash to be seen", func() (bool, string) {
			err := c.Create(t.Context(), second.DeepCopy(), client.DryRunAll)
			return apierrors.IsInvalid(err), errString(err)
		})
		requireInvalid(t, c.Create(t.Context(), second), "vobcluster.steward.dev", "metadata.name")
	})
}

// requireInvalid checks that err is webhook's 422 with a cause on path,
// which the message names.
func requireInvalid(t *testing.T, err error, webhook, path string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want a 422 Invalid naming %s", err, path)
	}
	if !strings.Contains(err.Error(), webhook) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s and %s", err, webhook, path)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil ||
		!slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return strings.HasPrefix(c.Field, path) }) {
		t.Errorf("the status of %v has no cause for %s", err, path)
	}
	seen := map[metav1.StatusCause]bool{}
	for _, c := range status.Status().Details.Causes {
		if seen[c] {
			t.Errorf("the status of %v repeats the cause %+v", err, c)
		}
		seen[c] = true
	}
	t.Logf("refused: %v", err)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
