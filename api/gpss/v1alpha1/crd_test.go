package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

var crdDir = filepath.Join("..", "..", "..", "config", "crd", "bases")

// server is a real kube-apiserver with the generated CRD installed.
var server = testenv.APIServer{CRDDirectoryPaths: []string{crdDir}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

func apiClient(t *testing.T, ns string) client.Client {
	return server.NamespacedClient(t, ns, gpssv1.AddToScheme)
}

// cluster returns a GpssCluster whose spec is specYAML, unstructured so
// that any field, zero values included, reaches the API server.
func cluster(t *testing.T, ns, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("spec of %s: %v", name, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gpssv1.GroupVersion.String(), "kind": "GpssCluster",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
}

func TestDefaults(t *testing.T) {
	c := apiClient(t, "gpss-defaults")
	ctx := context.Background()
	if err := c.Create(ctx, cluster(t, "gpss-defaults", "g", "image: gpss:1\nclusterID: c1")); err != nil {
		t.Fatal(err)
	}
	var g gpssv1.GpssCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: "gpss-defaults", Name: "g"}, &g); err != nil {
		t.Fatal(err)
	}
	s := g.Spec
	if s.Replicas != 2 || s.RolloutHaltSeconds != 90 || s.Ports != (gpssv1.Ports{GRPC: 5000, Gpfdist: 8080, Cluster: 5001}) ||
		s.GpfdistService.Type != "ClusterIP" || len(s.Etcd.Endpoints) != 0 {
		t.Errorf("defaults: %+v", s)
	}
}

func TestValidation(t *testing.T) {
	c := apiClient(t, "gpss-valid")
	ctx := context.Background()
	const ok = "image: gpss:1\nclusterID: c1\n"
	for _, tc := range []struct {
		name, spec string
		want       []string // in the error; none: accepted
	}{
		{name: "minimal", spec: ok},
		{name: "no image", spec: "clusterID: c1", want: []string{"spec.image: Required value"}},
		{name: "no cluster id", spec: "image: gpss:1", want: []string{"spec.clusterID: Required value"}},
		{name: "a cluster id with a slash", spec: "image: gpss:1\nclusterID: a/b", want: []string{"spec.clusterID: Invalid value"}},
		{name: "zero replicas", spec: ok + "replicas: 0", want: []string{"spec.replicas: Invalid value: 0"}},
		{name: "a zero rollout halt", spec: ok + "rolloutHaltSeconds: 0", want: []string{"spec.rolloutHaltSeconds: Invalid value: 0"}},
		{name: "ports alike", spec: ok + "ports: {grpc: 8080}", want: []string{"spec.ports: Invalid value", "must differ"}},
		{name: "a port out of range", spec: ok + "ports: {gpfdist: 70000}", want: []string{"spec.ports.gpfdist: Invalid value: 70000"}},
		{name: "endpoints and managed", spec: ok + "etcd: {endpoints: ['http://e:2379'], managed: {}}",
			want: []string{"give etcd.endpoints or etcd.managed, not both"}},
		{name: "an endpoint without a scheme", spec: ok + "etcd: {endpoints: ['e:2379']}", want: []string{"spec.etcd.endpoints[0]: Invalid value"}},
		{name: "two managed members", spec: ok + "etcd: {managed: {replicas: 2}}", want: []string{"spec.etcd.managed.replicas: Unsupported value: 2"}},
		{name: "a gpfdist Service type", spec: ok + "gpfdistService: {type: ExternalName}", want: []string{"spec.gpfdistService.type: Unsupported value"}},
		{name: "config as a list", spec: ok + "config: [1]", want: []string{"spec.config: Invalid value: \"array\""}},
		{name: "config with GPSS's settings", spec: ok + "config: {Logging: {BackendLevel: debug}, KeepAlive: {Time: 10s}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			name = strings.ToLower(strings.ReplaceAll(name, "'", ""))
			err := c.Create(ctx, cluster(t, "gpss-valid", name, tc.spec))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error %v, want Invalid with %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	long := cluster(t, "gpss-valid", strings.Repeat("g", 49), ok)
	if err := c.Create(ctx, long); err == nil || !strings.Contains(err.Error(), "at most 48 characters") {
		t.Errorf("a 49-character name: %v", err)
	}
}

func TestImmutableFields(t *testing.T) {
	c := apiClient(t, "gpss-immutable")
	ctx := context.Background()
	for _, tc := range []struct {
		name, spec, change, want string
	}{
		{name: "cluster-id", spec: "image: gpss:1\nclusterID: c1", change: "clusterID: c2", want: "clusterID is immutable"},
		{name: "to-endpoints", spec: "image: gpss:1\nclusterID: c1",
			change: "etcd: {endpoints: ['http://e:2379']}", want: "cannot switch between a managed etcd and etcd.endpoints"},
		{name: "from-endpoints", spec: "image: gpss:1\nclusterID: c1\netcd: {endpoints: ['http://e:2379']}",
			change: "etcd: {endpoints: []}", want: "cannot switch between a managed etcd and etcd.endpoints"},
		{name: "etcd-members", spec: "image: gpss:1\nclusterID: c1\netcd: {managed: {replicas: 1}}",
			change: "etcd: {managed: {replicas: 3}}", want: "etcd.managed.replicas is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := cluster(t, "gpss-immutable", tc.name, tc.spec)
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.change), &patch); err != nil {
				t.Fatal(err)
			}
			body, _ := yaml.YAMLToJSON([]byte("spec:\n  " + strings.ReplaceAll(tc.change, "\n", "\n  ")))
			err := c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("patch %s: %v, want %q", tc.change, err, tc.want)
			}
		})
	}
}
