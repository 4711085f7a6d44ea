package cluster

import (
	"encoding/json"
	"strings"
	"testing"
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
