package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/a\040b`: "/var/lib/a b",
		`/plain`:          "/plain",
		`/tail\04`:        `/tail\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCorefileCache: by default CoreDNS caches nothing of the cluster
// domain, as kubeadm's Corefile; with DNSCachesClusterDomain it caches all.
func TestCorefileCache(t *testing.T) {
	for _, tc := range []struct {
		caches bool
		want   []string
		absent []string
	}{
		{false, []string{"ttl 30", "disable success cluster.local", "disable denial cluster.local"}, nil},
		{true, []string{"    cache 30\n"}, []string{"disable", "ttl"}},
	} {
		c := DefaultConfig("/bin/lk")
		c.DNSCachesClusterDomain = tc.caches
		cf := c.renderCorefile()
		for _, w := range tc.want {
			if !strings.Contains(cf, w) {
				t.Errorf("DNSCachesClusterDomain=%v: Corefile lacks %q:\n%s", tc.caches, w, cf)
			}
		}
		for _, a := range tc.absent {
			if strings.Contains(cf, a) {
				t.Errorf("DNSCachesClusterDomain=%v: Corefile has %q:\n%s", tc.caches, a, cf)
			}
		}
	}
}

func TestRenderedFilesKeepTrafficInside(t *testing.T) {
	c := DefaultConfig("/bin/lk")
	if rc := renderResolvConf(); strings.TrimSpace(rc) != "nameserver "+DNSServiceIP {
		t.Errorf("pods would get resolver %q; only the cluster's DNS is allowed", rc)
	}
	if cf := c.renderCorefile(); strings.Contains(cf, "forward") || strings.Contains(cf, "/etc/resolv.conf") {
		t.Errorf("Corefile forwards outside the cluster:\n%s", cf)
	}
	var cni struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(renderCNIConfig()), &cni); err != nil {
		t.Fatal(err)
	}
	if cni.Plugins[0]["ipMasq"] != false {
		t.Error("the pod bridge masquerades; nothing should leave the namespace to need it")
	}
	if kc := c.renderKubeletConfig(); !strings.Contains(kc, "resolvConf: "+c.Path("resolv.conf")) {
		t.Error("kubelet would hand pods the host's resolver")
	}
}

func TestKubeconfigAndTokens(t *testing.T) {
	c := DefaultConfig("/bin/lk")
	ids := c.identities()
	tokens := map[string]string{}
	for _, id := range ids {
		tokens[id.Name] = "tok-" + id.Name
	}
	file := renderTokenFile(ids, tokens)
	if !strings.Contains(file, `tok-kubelet,system:node:localkube-node,system:node:localkube-node,"system:nodes"`) {
		t.Errorf("kubelet token line missing or wrong:\n%s", file)
	}
	if n := strings.Count(file, "\n"); n != len(ids) {
		t.Errorf("%d token lines, want %d", n, len(ids))
	}
	kc := renderKubeconfig("127.0.0.1:6443", "/ca.crt", "tok")
	for _, want := range []string{"server: https://127.0.0.1:6443", "certificate-authority: /ca.crt", "token: tok"} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubeconfig lacks %q", want)
		}
	}
}

func TestComponentsStartInDependencyOrder(t *testing.T) {
	c := DefaultConfig("/bin/lk")
	order := map[string]int{}
	for i, comp := range c.components() {
		order[comp.name] = i
		if comp.hostNetwork && comp.name != "forwarder" {
			t.Errorf("%s runs in the host's network namespace", comp.name)
		}
	}
	for _, pair := range [][2]string{{"etcd", "kube-apiserver"}, {"kube-apiserver", "kubelet"}, {"containerd", "kubelet"}, {"kube-proxy", "coredns"}} {
		if order[pair[0]] >= order[pair[1]] {
			t.Errorf("%s must start before %s", pair[0], pair[1])
		}
	}
	if _, ok := order["kwok"]; ok {
		t.Error("kwok starts with no simulated nodes asked for")
	}
	c.SimulatedNodes = 2
	if names := c.allComponentNames(); names[len(names)-1] != "kwok" {
		t.Errorf("kwok missing from %v", names)
	}
}

// TestSimulatedNodeTakesItsPodCapacity: the capacity `up
// --simulated-pod-capacity` asks for is what the scheduler sees, in both
// capacity and allocatable, on a node only pods that tolerate kwok land on.
func TestSimulatedNodeTakesItsPodCapacity(t *testing.T) {
	node := simulatedNode(1, 2000)
	if node.Name != "kwok-node-1" || node.Labels["type"] != "kwok" {
		t.Errorf("node %s labels %v, want kwok-node-1 labeled type=kwok", node.Name, node.Labels)
	}
	for what, list := range map[string]corev1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
		if pods := list[corev1.ResourcePods]; pods.Value() != 2000 {
			t.Errorf("%s pods = %s, want 2000", what, pods.String())
		}
		// Pods that request a GiB and a core each still all fit.
		if mem, cpu := list[corev1.ResourceMemory], list[corev1.ResourceCPU]; mem.Value() < 2000<<30 || cpu.Value() < 2000 {
			t.Errorf("%s memory %s cpu %s, want room for 2000 pods of 1Gi and 1 core", what, mem.String(), cpu.String())
		}
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "kwok.x-k8s.io/node" || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints %v, want kwok.x-k8s.io/node=fake:NoSchedule", node.Spec.Taints)
	}
	if pods := simulatedNode(0, DefaultConfig("/bin/lk").SimulatedPodCapacity).Status.Capacity[corev1.ResourcePods]; pods.Value() != 110 {
		t.Errorf("default pods capacity %s, want the kubelet's 110", pods.String())
	}
}

// TestControlPlaneClientsAreNotThrottled: the controller manager and the
// scheduler run with the raised client limits, so that a burst of
// StatefulSets is paced by the API server, not by the clients.
func TestControlPlaneClientsAreNotThrottled(t *testing.T) {
	c := DefaultConfig("/bin/lk")
	for _, comp := range c.components() {
		if comp.name != "kube-controller-manager" && comp.name != "kube-scheduler" {
			continue
		}
		argv := strings.Join(comp.argv(c), " ")
		for _, want := range []string{fmt.Sprintf("--kube-api-qps=%d ", ControlPlaneQPS), fmt.Sprintf("--kube-api-burst=%d ", ControlPlaneBurst)} {
			if !strings.Contains(argv, want) {
				t.Errorf("%s runs without %s: %s", comp.name, want, argv)
			}
		}
	}
}

// TestAuditPolicyLogsWorkloadsOnly: the API server accepts the policy; an
// operator's service account is logged with the answer (Metadata), its
// Events with their body (Request), the cluster's own controllers,
// components and the admin not at all.
func TestAuditPolicyLogsWorkloadsOnly(t *testing.T) {
	p, err := policy.LoadPolicyFromBytes([]byte(renderAuditPolicy()))
	if err != nil {
		t.Fatalf("the API server would refuse the audit policy: %v", err)
	}
	eval := policy.NewPolicyRuleEvaluator(p)
	operator := []string{"system:serviceaccounts", "system:serviceaccounts:steward-system", "system:authenticated"}
	for _, tc := range []struct {
		user          string
		groups        []string
		group, object string
		want          audit.Level
	}{
		{"system:serviceaccount:steward-system:steward", operator, "apps", "statefulsets", audit.LevelMetadata},
		{"system:serviceaccount:steward-system:steward", operator, "events.k8s.io", "events", audit.LevelRequest},
		{"system:serviceaccount:steward-system:steward", operator, "", "events", audit.LevelRequest},
		{"system:serviceaccount:kube-system:statefulset-controller", []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, "apps", "statefulsets", audit.LevelNone},
		{"system:serviceaccount:kube-system:statefulset-controller", []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, "events.k8s.io", "events", audit.LevelNone},
		{"system:kube-scheduler", []string{"system:masters", "system:authenticated"}, "", "pods", audit.LevelNone},
		{"localkube-admin", []string{"system:masters", "system:authenticated"}, "apps", "statefulsets", audit.LevelNone},
		{"system:node:localkube-node", []string{"system:nodes", "system:authenticated"}, "", "pods", audit.LevelNone},
	} {
		attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: tc.user, Groups: tc.groups},
			Verb: "create", APIGroup: tc.group, Resource: tc.object, Namespace: "ns", Name: "zk", ResourceRequest: true}
		if got := eval.EvaluatePolicyRule(attrs).Level; got != tc.want {
			t.Errorf("%s's %s.%s are audited at level %q, want %q", tc.user, tc.object, tc.group, got, tc.want)
		}
	}
}
