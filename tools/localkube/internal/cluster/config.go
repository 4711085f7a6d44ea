package cluster

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/stewardhq/steward/tools/localkube/internal/netns"
	"github.com/stewardhq/steward/tools/localkube/internal/proc"
)

// Config says where a cluster keeps its files and which addresses it uses.
// The addresses live only inside the cluster's network namespace.
type Config struct {
	// StateDir holds certificates, configuration, data, logs and PID files.
	StateDir string
	// RunDir holds sockets and runtime state (containerd's state, shims).
	RunDir string
	// BinDir holds the binaries `localkube build` made.
	BinDir string
	// NetNS is the name of the cluster's network namespace.
	NetNS string
	// NodeName is the name of the one real node.
	NodeName string
	// APIPort is the host loopback port the API server is forwarded to.
	APIPort int
	// SimulatedNodes is how many kwok nodes to create.
	SimulatedNodes int
	// SimulatedPodCapacity is the pods capacity of each kwok node. The
	// kubelet's default, 110, suits tests; scale benchmarks need thousands.
	SimulatedPodCapacity int
	// DNSCachesClusterDomain makes CoreDNS cache its answers for the
	// cluster domain (5 s, the kubernetes plugin's TTL, for "no such
	// name"), as a DNS cache in front of it would (NodeLocal DNSCache,
	// older Corefiles). By default it does not, as kubeadm's Corefile.
	DNSCachesClusterDomain bool
}

// The cluster's fixed addressing. 10.201.0.0/16 and the pod and service
// ranges exist only inside the namespace.
const (
	NodeIP        = "10.201.0.1"
	ServiceCIDR   = "10.96.0.0/16"
	APIServiceIP  = "10.96.0.1"
	DNSServiceIP  = "10.96.0.10"
	PodCIDR       = "10.244.0.0/24"
	ClusterCIDR   = "10.244.0.0/16"
	KwokPodCIDR   = "10.245.0.1/16"
	ClusterDomain = "cluster.local"
	// NodeDevice is the port-less bridge that carries the node address and
	// the namespace's default route: anything sent off-cluster ends there.
	NodeDevice = "node0"
	// EgressChain counts and drops packets that would leave through
	// NodeDevice, as a second guard behind the port-less bridge.
	EgressChain = "LOCALKUBE-EGRESS"
	// PauseImage is the pod sandbox image `localkube build` makes.
	PauseImage = "localhost/localkube/pause:1"
	// StorageClassName is the default StorageClass the provisioner serves.
	StorageClassName = "localkube-hostpath"
	// ProvisionerName is the provisioner name the StorageClass names.
	ProvisionerName = "localkube.steward.dev/hostpath"
	apiServerPort   = 6443
	// DefaultSimulatedPodCapacity is a kwok node's pods capacity unless
	// told otherwise: the kubelet's default maxPods.
	DefaultSimulatedPodCapacity = 110
)

// DefaultConfig returns the configuration `localkube up` uses unless told
// otherwise.
func DefaultConfig(binDir string) Config {
	return Config{
		StateDir: "/var/lib/localkube",
		RunDir:   "/run/localkube",
		BinDir:   binDir,
		NetNS:    "localkube",
		NodeName: "localkube-node",
		APIPort:  6443,

		SimulatedPodCapacity: DefaultSimulatedPodCapacity,
	}
}

// Namespace is the cluster's network namespace.
func (c Config) Namespace() netns.Namespace { return netns.Namespace{Name: c.NetNS} }

// Path returns a path under the state directory.
func (c Config) Path(elem ...string) string {
	return filepath.Join(append([]string{c.StateDir}, elem...)...)
}

// Bin returns the path of a built binary.
func (c Config) Bin(name string) string { return filepath.Join(c.BinDir, name) }

// Kubeconfig is the admin kubeconfig for use from the host.
func (c Config) Kubeconfig() string { return c.Path("kubeconfig") }

// AuditLog is the API server's audit log: every request of a workload's
// service account (see renderAuditPolicy). `localkube logs audit` prints it.
func (c Config) AuditLog() string { return c.Daemon("audit").LogFile }

// ContainerdSocket is the CRI endpoint of the node's containerd.
func (c Config) ContainerdSocket() string {
	return filepath.Join(c.RunDir, "containerd", "containerd.sock")
}

// Daemon returns the process record of a component.
func (c Config) Daemon(name string) proc.Daemon {
	return proc.Daemon{
		Name:    name,
		PIDFile: c.Path("pids", name+".pid"),
		LogFile: c.Path("logs", name+".log"),
	}
}

// HostAPIAddress is where the forwarder listens on the host.
func (c Config) HostAPIAddress() string { return fmt.Sprintf("127.0.0.1:%d", c.APIPort) }

// InternalAPIAddress is the API server's address inside the namespace.
func InternalAPIAddress() string {
	return net.JoinHostPort(NodeIP, fmt.Sprint(apiServerPort))
}
