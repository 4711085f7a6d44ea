package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/testenv"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

var crdDir = filepath.Join("..", "..", "..", "config", "crd", "bases")

// server is a real kube-apiserver with the generated CRD installed.
var server = testenv.APIServer{CRDDirectoryPaths: []string{crdDir}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

// apiClient returns a client of the shared API server and a fresh
// namespace. It skips the test without the control-plane binaries (make
// unit sets KUBEBUILDER_ASSETS).
func apiClient(t *testing.T) (client.Client, string) {
	return server.NamespacedClient(t, "zk-crd", zkv1.AddToScheme), "zk-crd"
}

// cluster returns a ZookeeperCluster named name whose spec is the YAML
// specYAML, as unstructured so that a test can send any field, zero values
// included.
func cluster(t *testing.T, ns, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	if err := unmarshalYAML([]byte(specYAML), &spec); err != nil {
		t.Fatalf("spec of %s: %v", name, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": zkv1.GroupVersion.String(),
		"kind":       "ZookeeperCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
}

// expectInvalid checks that err is an Invalid error whose message has
// every one of want.
func expectInvalid(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("accepted; want rejected with %q", want)
		return
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("error %v is not Invalid", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestCRDOnAPIServer(t *testing.T) {
	c, ns := apiClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("defaults match Default", func(t *testing.T) {
		if err := c.Create(ctx, cluster(t, ns, "defaults", "{}")); err != nil {
			t.Fatal(err)
		}
		var got zkv1.ZookeeperCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &got); err != nil {
			t.Fatal(err)
		}
		// Default also derives the memory request from the heap, which no
		// schema default can express (the defaulting webhook writes it):
		// the rest is the CRD's.
		var want zkv1.ZookeeperCluster
		zkv1.Default(&want)
		if want.Spec.Resources.Requests.Memory().IsZero() {
			t.Errorf("Default set no memory request: %+v", want.Spec.Resources)
		}
		want.Spec.Resources = corev1.ResourceRequirements{}
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("CRD defaults\n%+v\ndiffer from Default\n%+v", got.Spec, want.Spec)
		}
		// Default leaves what the API server filled in alone, and adds the
		// memory request.
		again := got.DeepCopy()
		zkv1.Default(again)
		again.Spec.Resources = corev1.ResourceRequirements{}
		if !equality.Semantic.DeepEqual(again.Spec, got.Spec) {
			t.Errorf("Default changed a defaulted spec beyond the memory request: %+v", again.Spec)
		}
	})

	t.Run("sample is valid", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "zookeeper_v1alpha1_zookeepercluster.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := unmarshalYAML(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := c.Create(ctx, &u); err != nil {
			t.Fatal(err)
		}
	})

	valid := []struct{ name, spec string }{
		{"five-two", "{replicas: 5, maxUnavailable: 2}"},
		{"one", "{replicas: 1}"},
		{"four-one", "{replicas: 4, maxUnavailable: 1}"},
		{"no-disruption", "{maxUnavailable: 0}"},
		{"nodeport", "{clientService: {type: NodePort, nodePort: 30181}}"},
		{"lb", "{clientService: {type: LoadBalancer, nodePort: 30182, annotations: {a: b}}}"},
		{"user-keys", `{config: {tickTime: "3000", serverCnxnFactory: "x", admin: "y", "metricsProvider.className": "z", "4lw.x": "w"}}`},
		{"heap", "{heap: 2g}"},
		{"storage", "{storage: {size: 10Gi, storageClassName: fast, reclaimPolicy: Delete}}"},
	}
	for _, v := range valid {
		t.Run("valid "+v.name, func(t *testing.T) {
			if err := c.Create(ctx, cluster(t, ns, v.name, v.spec)); err != nil {
				t.Errorf("rejected: %v", err)
			}
		})
	}

	type invalid struct {
		name, spec string
		want       []string
	}
	corpus := []invalid{
		{"replicas-zero", "{replicas: 0}", []string{"spec.replicas"}},
		{"replicas-16", "{replicas: 16}", []string{"spec.replicas"}},
		{"adminport-zero", "{adminPort: 0}", []string{"spec.adminPort"}},
		{"adminport-high", "{adminPort: 65536}", []string{"spec.adminPort"}},
		{"adminport-client", "{adminPort: 2181}", []string{"spec.adminPort", "must differ"}},
		{"adminport-election", "{adminPort: 3888}", []string{"spec.adminPort", "must differ"}},
		{"nodeport-clusterip", "{clientService: {nodePort: 30181}}", []string{"spec.clientService.nodePort", "requires type NodePort"}},
		{"service-type", "{clientService: {type: ExternalName}}", []string{"spec.clientService.type"}},
		{"maxunavailable-3", "{replicas: 3, maxUnavailable: 2}", []string{"spec.maxUnavailable", "(replicas-1)/2"}},
		{"maxunavailable-5", "{replicas: 5, maxUnavailable: 3}", []string{"spec.maxUnavailable"}},
		{"maxunavailable-negative", "{maxUnavailable: -1}", []string{"spec.maxUnavailable"}},
		{"heap", "{heap: lots}", []string{"spec.heap"}},
		{"reclaim", "{storage: {reclaimPolicy: Keep}}", []string{"spec.storage.reclaimPolicy"}},
		{"pull-policy", "{imagePullPolicy: Sometimes}", []string{"spec.imagePullPolicy"}},
		{"image-empty", `{image: ""}`, []string{"spec.image"}},
		{"config-key-syntax", `{config: {"a b": x}}`, []string{"spec.config", "property names"}},
	}
	// Every key and prefix the operator owns, as Go lists them, is
	// rejected, and a key next to it is not: this is where the CEL rule
	// and Go are checked to agree on a real server (TestOwnedKeysMatchCRD
	// checks that the rule's text names no others).
	var near []string
	for i, k := range zkv1.OperatorOwnedConfigKeys {
		corpus = append(corpus, invalid{fmt.Sprintf("owned-key-%d", i), fmt.Sprintf("{config: {%q: x}}", k),
			[]string{"spec.config", "keys owned by the operator"}})
		near = append(near, k+"2", "x"+k)
	}
	for i, p := range zkv1.OperatorOwnedConfigPrefixes {
		corpus = append(corpus, invalid{fmt.Sprintf("owned-prefix-%d", i), fmt.Sprintf("{config: {%q: x, tickTime: \"1\"}}", p+"1"),
			[]string{"spec.config", "keys owned by the operator"}})
		near = append(near, strings.TrimSuffix(p, ".")+"1", "x"+p+"1")
	}
	t.Run("valid keys near owned ones", func(t *testing.T) {
		for i, k := range near {
			if zkv1.IsOperatorOwnedConfigKey(k) {
				t.Fatalf("%s is owned; pick another near key", k)
			}
			if err := c.Create(ctx, cluster(t, ns, fmt.Sprintf("near-%d", i), fmt.Sprintf("{config: {%q: x}}", k))); err != nil {
				t.Errorf("config key %s rejected: %v", k, err)
			}
		}
	})
	for _, inv := range corpus {
		t.Run("invalid "+inv.name, func(t *testing.T) {
			expectInvalid(t, c.Create(ctx, cluster(t, ns, inv.name, inv.spec)), inv.want...)
		})
	}

	t.Run("invalid name", func(t *testing.T) {
		for _, name := range []string{strings.Repeat("a", 53), "1zk", "zk.a"} {
			expectInvalid(t, c.Create(ctx, cluster(t, ns, name, "{}")), "metadata.name must be a DNS-1035 label")
		}
		if err := c.Create(ctx, cluster(t, ns, strings.Repeat("a", 52), "{}")); err != nil {
			t.Errorf("52 characters rejected: %v", err)
		}
	})

	t.Run("immutable fields", func(t *testing.T) {
		base := "{storage: {size: 2Gi, storageClassName: fast}}"
		if err := c.Create(ctx, cluster(t, ns, "immutable", base)); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cluster(t, ns, "noclass", "{}")); err != nil {
			t.Fatal(err)
		}
		updates := []struct {
			name, obj, spec string
			want            []string
		}{
			{"class", "immutable", "{storage: {size: 2Gi, storageClassName: slow}}", []string{"spec.storage.storageClassName", "storageClassName is immutable"}},
			{"class-unset", "immutable", "{storage: {size: 2Gi}}", []string{"spec.storage.storageClassName", "storageClassName is immutable"}},
			{"class-set", "noclass", "{storage: {storageClassName: fast}}", []string{"spec.storage.storageClassName", "storageClassName is immutable"}},
		}
		for _, u := range updates {
			t.Run(u.name, func(t *testing.T) {
				expectInvalid(t, update(ctx, c, cluster(t, ns, u.obj, u.spec)), u.want...)
			})
		}
		// What may change does.
		ok := "{replicas: 5, maxUnavailable: 2, storage: {size: 2Gi, storageClassName: fast, reclaimPolicy: Delete}, adminPort: 8081}"
		if err := update(ctx, c, cluster(t, ns, "immutable", ok)); err != nil {
			t.Errorf("mutable fields: %v", err)
		}
	})
}

// update replaces the spec of the stored object u names with u's spec.
func update(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	var cur unstructured.Unstructured
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), &cur); err != nil {
		return err
	}
	cur.Object["spec"] = u.Object["spec"]
	return c.Update(ctx, &cur)
}
