package v1alpha1_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

// namespacedClient returns a client of the shared API server and creates
// the namespace ns.
func namespacedClient(t *testing.T, ns string) client.Client {
	return server.NamespacedClient(t, ns, zkv1.AddToScheme)
}

// TestDefaultsMatchSchema checks that the CRD's schema defaults and
// Default agree on a minimal ZookeeperCluster.
func TestDefaultsMatchSchema(t *testing.T) {
	const ns = "zk-schema-defaults"
	c := namespacedClient(t, ns)
	kinds, _ := testenv.CRDs(t, crdDir, zkv1.GroupVersion.Group)
	testenv.CheckDefaults(t, c, kinds, []testenv.Defaults{{
		Minimal: testenv.Object(t, zkv1.GroupVersion.String(), "ZookeeperCluster", ns, "zk", "{}"),
		Typed:   &zkv1.ZookeeperCluster{},
		Default: func(o client.Object) { zkv1.Default(o.(*zkv1.ZookeeperCluster)) },
		// The memory request, derived from the heap.
		GoOnly: []string{"spec.resources.requests"},
	}})
}

// TestCELRules checks that every CEL rule of the CRD refuses an object
// that breaks it, with its message.
func TestCELRules(t *testing.T) {
	const ns = "zk-cel"
	c := namespacedClient(t, ns)
	_, rules := testenv.CRDs(t, crdDir, zkv1.GroupVersion.Group)
	f := &testenv.Fixtures{T: t, APIVersion: zkv1.GroupVersion.String(), Namespace: ns}
	rule := func(path, message string) testenv.CELRule {
		return testenv.CELRule{Kind: "ZookeeperCluster", Path: path, Message: message}
	}
	testenv.CheckCELRules(t, c, rules, []testenv.Violation{
		f.Create(rule("", "metadata.name must be a DNS-1035 label of at most 52 characters: it names the Services and the StatefulSet's pods"),
			strings.Repeat("z", 53), "{}"),
		f.Create(rule("spec.maxUnavailable", "maxUnavailable must not exceed (replicas-1)/2, the members an ensemble can lose and keep its quorum (1 is always allowed)"),
			"", "{replicas: 3, maxUnavailable: 2}"),
		f.Create(rule("spec.adminPort", "adminPort must differ from the client (2181), quorum (2888) and election (3888) ports"), "", "{adminPort: 2888}"),
		f.Create(rule("spec.clientService.nodePort", "nodePort requires type NodePort or LoadBalancer"), "", "{clientService: {nodePort: 30181}}"),
		f.Create(rule("spec.config", "keys owned by the operator are not allowed: dataDir, dataLogDir, clientPort, clientPortAddress, secureClientPort, secureClientPortAddress, sslQuorum, dynamicConfigFile, reconfigEnabled, standaloneEnabled, quorumListenOnAllIPs, peerType, 4lw.commands.whitelist, and keys starting with server., group., weight., admin. or ssl."),
			"", "{config: {dataDir: /x}}"),
		f.Create(rule("spec.config", "keys must be property names of at most 128 characters: letters, digits, '.', '_' and '-'"), "", `{config: {"a b": x}}`),
		f.Change(rule("spec.storage.storageClassName", "storageClassName is immutable"), "{storage: {storageClassName: fast}}", "{storage: {storageClassName: slow}}"),
	})
}
