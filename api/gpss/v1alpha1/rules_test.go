package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestDefaultsMatchSchema checks that the CRD's schema defaults and
// Default agree on a minimal GpssCluster, and on one that asks for a
// managed etcd without saying more.
func TestDefaultsMatchSchema(t *testing.T) {
	const ns = "gpss-schema-defaults"
	c := apiClient(t, ns)
	obj := func(name, spec string) *unstructured.Unstructured {
		return testenv.Object(t, gpssv1.GroupVersion.String(), "GpssCluster", ns, name, spec)
	}
	def := func(o client.Object) { gpssv1.Default(o.(*gpssv1.GpssCluster)) }
	kinds, _ := testenv.CRDs(t, crdDir, gpssv1.GroupVersion.Group)
	testenv.CheckDefaults(t, c, kinds, []testenv.Defaults{
		// Without endpoints, Default asks for a managed etcd; the schema
		// cannot say "managed unless endpoints".
		{Minimal: obj("minimal", "{image: gpss:1, clusterID: c1}"), Typed: &gpssv1.GpssCluster{}, Default: def,
			GoOnly: []string{"spec.etcd.managed"}},
		{Minimal: obj("managed", "{image: gpss:1, clusterID: c2, etcd: {managed: {}}}"), Typed: &gpssv1.GpssCluster{}, Default: def},
	})
}

// TestCELRules checks that every CEL rule of the CRD refuses an object
// that breaks it, with its message.
func TestCELRules(t *testing.T) {
	const ns = "gpss-cel"
	c := apiClient(t, ns)
	_, rules := testenv.CRDs(t, crdDir, gpssv1.GroupVersion.Group)
	f := &testenv.Fixtures{T: t, APIVersion: gpssv1.GroupVersion.String(), Namespace: ns}
	rule := func(path, message string) testenv.CELRule {
		return testenv.CELRule{Kind: "GpssCluster", Path: path, Message: message}
	}
	spec := func(more string) string { return "{image: gpss:1, clusterID: c1" + more + "}" }
	managed := func(m string) string { return spec(", etcd: {managed: " + m + "}") }
	testenv.CheckCELRules(t, c, rules, []testenv.Violation{
		f.Create(rule("", "metadata.name must be a DNS-1035 label of at most 48 characters: it names the Services, the StatefulSet's pods and the managed etcd"),
			"g1234567890123456789012345678901234567890123456789", spec("")),
		f.Create(rule("spec.ports", "ports.grpc, ports.gpfdist and ports.cluster must differ"), "", spec(", ports: {grpc: 8080}")),
		f.Change(rule("spec.clusterID", "clusterID is immutable"), spec(""), "{image: gpss:1, clusterID: c2}"),
		f.Create(rule("spec.etcd", "give etcd.endpoints or etcd.managed, not both"), "", spec(", etcd: {endpoints: ['http://e:2379'], managed: {}}")),
		f.Change(rule("spec.etcd", "a cluster cannot switch between a managed etcd and etcd.endpoints"), spec(""), spec(", etcd: {endpoints: ['http://e:2379']}")),
		f.Change(rule("spec.etcd.managed.replicas", "etcd.managed.replicas is immutable"), managed("{replicas: 1}"), managed("{replicas: 3}")),
		f.Change(rule("spec.etcd.managed.storage.storageClassName", "storageClassName is immutable"),
			managed("{storage: {storageClassName: fast}}"), managed("{storage: {storageClassName: slow}}")),
	})
}
