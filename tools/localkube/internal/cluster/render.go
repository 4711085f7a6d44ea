package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Identity is a static-token identity a component authenticates as.
type Identity struct {
	Name   string // file name stem of its kubeconfig
	User   string
	Groups []string
}

// identities lists who talks to the API server. The node's kubelet is
// confined by the Node authorizer; the other components are trusted parts of
// a throw-away local cluster and run as cluster administrators.
func (c Config) identities() []Identity {
	admin := []string{"system:masters"}
	return []Identity{
		{Name: "admin", User: "localkube-admin", Groups: admin},
		{Name: "controller-manager", User: "system:kube-controller-manager", Groups: admin},
		{Name: "scheduler", User: "system:kube-scheduler", Groups: admin},
		{Name: "kubelet", User: "system:node:" + c.NodeName, Groups: []string{"system:nodes"}},
		{Name: "kube-proxy", User: "system:kube-proxy", Groups: admin},
		{Name: "coredns", User: "localkube:coredns", Groups: admin},
		{Name: "provisioner", User: "localkube:provisioner", Groups: admin},
		{Name: "kwok", User: "localkube:kwok", Groups: admin},
	}
}

// renderTokenFile renders the API server's --token-auth-file.
func renderTokenFile(ids []Identity, tokens map[string]string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s,%s,%s,\"%s\"\n", tokens[id.Name], id.User, id.User, strings.Join(id.Groups, ","))
	}
	return b.String()
}

// renderKubeconfig renders a kubeconfig for server that trusts caFile and
// authenticates with token.
func renderKubeconfig(server, caFile, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: localkube
  cluster:
    server: https://%s
    certificate-authority: %s
users:
- name: localkube
  user:
    token: %s
contexts:
- name: localkube
  context:
    cluster: localkube
    user: localkube
current-context: localkube
`, server, caFile, token)
}

// renderContainerdConfig renders containerd's configuration (format version
// 2, containerd 1.6). runc is reached through the wrapper that clamps the
// negative oom_score_adj values this kernel refuses.
func (c Config) renderContainerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, c.Path("containerd"), c.RunDir+"/containerd/state", c.ContainerdSocket(), c.Path("containerd-opt"),
		PauseImage, c.Bin("runc-wrapper"), c.Path("cni"))
}

// renderCNIConfig renders the node's CNI network: one bridge with a static
// pod range, the gateway on the bridge and no masquerading, since no
// traffic is meant to leave the namespace.
func renderCNIConfig() string {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "localkube",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": PodCIDR}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	out, _ := json.MarshalIndent(conf, "", "  ")
	return string(out) + "\n"
}

// renderKubeletConfig renders the KubeletConfiguration. Image garbage
// collection is off: images come only from `localkube load-image` and could
// not be pulled again.
func (c Config) renderKubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
clusterDomain: %s
clusterDNS:
- %s
resolvConf: %s
podLogsDir: %s
address: %s
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
serializeImagePulls: false
maxPods: 110
`, c.ContainerdSocket(), c.Path("pki", "ca.crt"), ClusterDomain, DNSServiceIP,
		c.Path("resolv.conf"), c.Path("pod-logs"), NodeIP)
}

// renderResolvConf is the node's resolver as the kubelet hands it to pods:
// the cluster's DNS and nothing of the host's.
func renderResolvConf() string {
	return "nameserver " + DNSServiceIP + "\n"
}

// renderKubeProxyConfig renders the KubeProxyConfiguration (iptables mode).
// Conntrack limits are left as the kernel has them.
func (c Config) renderKubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
clientConnection:
  kubeconfig: %s
conntrack:
  maxPerCore: 0
  min: 0
`, ClusterCIDR, c.NodeName, NodeIP, c.Path("kubeconfigs", "kube-proxy.kubeconfig"))
}

// renderCorefile renders CoreDNS's configuration. It answers for the cluster
// domain only; there is deliberately no forward plugin, so names outside the
// cluster never reach any resolver beyond this one. Its cache is kubeadm's
// (v1.36): answers for the cluster domain are not cached, so a pod
// re-created under its old name is found at its new address, and a name
// asked for before its pod existed is found as soon as it does. With
// DNSCachesClusterDomain they are, for the TTL the kubernetes plugin gives
// (5 s by default), as on a cluster with a DNS cache in front of CoreDNS;
// benchmarks use it to show what such a cluster costs.
func (c Config) renderCorefile() string {
	ttl, cache := "        ttl 30\n", fmt.Sprintf(`    cache 30 {
        disable success %[1]s
        disable denial %[1]s
    }
`, ClusterDomain)
	if c.DNSCachesClusterDomain {
		ttl, cache = "", "    cache 30\n"
	}
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
%s    }
%s}
`, NodeIP, ClusterDomain, c.Path("kubeconfigs", "coredns.kubeconfig"), ttl, cache)
}

// renderAuditPolicy renders the API server's audit policy: one line per
// request of a workload's service account (an operator under test), with
// who asked, what, and the answer's code and reason, so that a test or a
// benchmark can tell which of the operator's requests failed (a 409 on an
// update, a 404 on a delete). Events are logged with their body, which
// names the reason that identifies the code that recorded them. The
// cluster's own controllers (kube-system's service accounts), its
// components and the admin are not logged: they would drown the rest.
func renderAuditPolicy() string {
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
- ResponseStarted
rules:
- level: None
  userGroups:
  - system:serviceaccounts:kube-system
- level: Request
  userGroups:
  - system:serviceaccounts
  resources:
  - group: ""
    resources:
    - events
  - group: events.k8s.io
    resources:
    - events
- level: Metadata
  userGroups:
  - system:serviceaccounts
- level: None
`
}
