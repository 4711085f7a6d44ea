package cluster

import "fmt"

// ControlPlaneQPS and ControlPlaneBurst are the client rate limits of the
// controller manager (each of its controllers has its own), the scheduler
// and the provisioner. Their defaults (20 requests/s, burst 30, per
// controller; the scheduler's 50, burst 100; client-go's 5, burst 10) pace
// a burst of StatefulSets at a few pods, claims, volumes and bindings a
// second: for a thousand 3-replica sets, a quarter of an hour in the
// controllers and half an hour in the provisioner, and a scale benchmark
// would measure these limits rather than the API server or the operator.
// On one machine the API server saturates far below these figures, and
// its priority and fairness still protects it.
const (
	ControlPlaneQPS   = 500
	ControlPlaneBurst = 1000
)

// component is one daemon of the cluster, in start order.
type component struct {
	name string
	// hostNetwork marks the one process that must live in the host's
	// namespace (the loopback forwarder); every other one runs inside the
	// cluster's namespace.
	hostNetwork bool
	argv        func(c Config) []string
	env         []string
}

// components returns the daemons `up` starts, in order, and `down` stops in
// reverse (with the node's pods removed before containerd goes).
func (c Config) components() []component {
	pki := func(name string) string { return c.Path("pki", name) }
	kubeconfig := func(name string) string { return c.Path("kubeconfigs", name+".kubeconfig") }
	list := []component{
		{name: "forwarder", hostNetwork: true, argv: func(c Config) []string {
			return []string{c.Bin("localkube"), "forward", "--netns", c.NetNS,
				"--listen", c.HostAPIAddress(), "--target", InternalAPIAddress()}
		}},
		{name: "etcd", argv: func(c Config) []string {
			return []string{c.Bin("etcd"),
				"--name=localkube", "--data-dir=" + c.Path("etcd"),
				"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
				"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
				"--initial-cluster=localkube=http://127.0.0.1:2380",
				// A local throw-away cluster on a shared disk: skipping
				// fsync keeps API latency low, at the cost of durability
				// across a machine crash.
				"--unsafe-no-fsync", "--log-level=warn"}
		}},
		{name: "kube-apiserver", argv: func(c Config) []string {
			return []string{c.Bin("kube-apiserver"),
				"--etcd-servers=http://127.0.0.1:2379",
				"--bind-address=0.0.0.0", fmt.Sprintf("--secure-port=%d", apiServerPort), "--advertise-address=" + NodeIP,
				"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
				"--client-ca-file=" + pki("ca.crt"), "--token-auth-file=" + pki("tokens.csv"),
				"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
				"--service-cluster-ip-range=" + ServiceCIDR, "--allow-privileged=true",
				"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain,
				"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
				"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
				"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
				"--kubelet-preferred-address-types=InternalIP",
				"--audit-policy-file=" + c.Path("audit-policy.yaml"), "--audit-log-path=" + c.AuditLog(),
				"--audit-log-maxsize=200", "--audit-log-maxbackup=1",
				"--profiling=false", "--v=1"}
		}},
		{name: "kube-controller-manager", argv: func(c Config) []string {
			return []string{c.Bin("kube-controller-manager"),
				"--kubeconfig=" + kubeconfig("controller-manager"),
				"--authentication-kubeconfig=" + kubeconfig("controller-manager"),
				"--authorization-kubeconfig=" + kubeconfig("controller-manager"),
				"--bind-address=127.0.0.1", "--leader-elect=false",
				"--service-account-private-key-file=" + pki("sa.key"), "--root-ca-file=" + pki("ca.crt"),
				"--use-service-account-credentials=true", "--service-cluster-ip-range=" + ServiceCIDR,
				fmt.Sprintf("--kube-api-qps=%d", ControlPlaneQPS), fmt.Sprintf("--kube-api-burst=%d", ControlPlaneBurst),
				"--profiling=false", "--v=1"}
		}},
		{name: "kube-scheduler", argv: func(c Config) []string {
			return []string{c.Bin("kube-scheduler"),
				"--kubeconfig=" + kubeconfig("scheduler"),
				"--authentication-kubeconfig=" + kubeconfig("scheduler"),
				"--authorization-kubeconfig=" + kubeconfig("scheduler"),
				"--bind-address=127.0.0.1", "--leader-elect=false",
				fmt.Sprintf("--kube-api-qps=%d", ControlPlaneQPS), fmt.Sprintf("--kube-api-burst=%d", ControlPlaneBurst),
				"--profiling=false", "--v=1"}
		}},
		{name: "containerd", argv: func(c Config) []string {
			return []string{"containerd", "--config", c.Path("containerd.toml")}
		}},
		{name: "kubelet", argv: func(c Config) []string {
			return []string{c.Bin("kubelet"),
				"--config=" + c.Path("kubelet.yaml"), "--kubeconfig=" + kubeconfig("kubelet"),
				"--root-dir=" + c.Path("kubelet"), "--node-ip=" + NodeIP,
				"--hostname-override=" + c.NodeName, "--v=1"}
		}},
		{name: "kube-proxy", argv: func(c Config) []string {
			return []string{c.Bin("kube-proxy"), "--config=" + c.Path("kube-proxy.yaml"), "--v=1"}
		}},
		{name: "coredns", argv: func(c Config) []string {
			return []string{c.Bin("coredns"), "-conf", c.Path("Corefile")}
		}},
		{name: "provisioner", argv: func(c Config) []string {
			return []string{c.Bin("localkube"), "provisioner",
				"--kubeconfig=" + kubeconfig("provisioner"), "--dir=" + c.Path("volumes"),
				"--name=" + ProvisionerName}
		}},
	}
	if c.SimulatedNodes > 0 {
		list = append(list, component{name: "kwok", argv: func(c Config) []string {
			return []string{c.Bin("kwok"), "--kubeconfig=" + kubeconfig("kwok"),
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
				"--config=" + c.Bin("kwok-stages.yaml"), "--node-lease-duration-seconds=40",
				"--cidr=" + KwokPodCIDR, "--node-ip=" + NodeIP,
				"--server-address=127.0.0.1:10247"}
		}})
	}
	return list
}

// allComponentNames lists every daemon `down` may have to stop, whatever the
// configuration `up` ran with.
func (c Config) allComponentNames() []string {
	c.SimulatedNodes = 1
	var names []string
	for _, comp := range c.components() {
		names = append(names, comp.name)
	}
	return names
}
