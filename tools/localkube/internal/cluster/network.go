package cluster

import (
	"fmt"
	"strings"
)

// setupNetwork creates the cluster's namespace: loopback, the port-less node
// bridge carrying the node address and the default route, forwarding for the
// pod bridge, and the egress chain that counts and drops whatever would
// leave through the node bridge.
//
// Connections the node's own processes open to a Service address need a
// chain of their own (outputChain). The kernel picks the output device
// before kube-proxy's DNAT in the nat OUTPUT hook, and every OUTPUT rule,
// filter's too, still sees that first device after the packet is rerouted:
// a connection to a ClusterIP looks as if it left through the default
// route, node0, though it goes to a pod on cni0. Without the exception the
// API server could not call a webhook or an aggregated API behind a
// Service. Only DNATed packets whose new destination is on the pod bridge
// are let through; everything else bound for node0 still reaches
// EgressChain.
func (c Config) setupNetwork() error {
	ns := c.Namespace()
	if err := ns.Create(); err != nil {
		return err
	}
	steps := [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", NodeDevice, "type", "bridge"},
		{"ip", "addr", "add", NodeIP + "/32", "dev", NodeDevice},
		{"ip", "link", "set", NodeDevice, "up"},
		{"ip", "route", "add", "default", "dev", NodeDevice},
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
		// Pods on the same bridge reach each other through Service
		// addresses only if bridged traffic passes through iptables.
		{"sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1"},
		{"iptables", "-w", "-N", EgressChain},
		{"iptables", "-w", "-A", EgressChain, "-j", "DROP"},
		{"iptables", "-w", "-I", "FORWARD", "-o", NodeDevice, "-j", EgressChain},
		{"iptables", "-w", "-N", outputChain},
		{"iptables", "-w", "-A", outputChain, "-d", NodeIP, "-j", "RETURN"},
		{"iptables", "-w", "-A", outputChain, "-d", PodCIDR, "-m", "conntrack", "--ctstate", "DNAT", "-j", "RETURN"},
		{"iptables", "-w", "-A", outputChain, "-j", EgressChain},
		{"iptables", "-w", "-I", "OUTPUT", "-o", NodeDevice, "-j", outputChain},
	}
	for _, argv := range steps {
		if _, err := ns.Run(argv...); err != nil {
			return fmt.Errorf("set up network namespace %s: %w", c.NetNS, err)
		}
	}
	return nil
}

// outputChain sorts the node's own packets bound for NodeDevice (see
// setupNetwork): to the node address or to a pod through a Service, they
// return; anything else goes to EgressChain.
const outputChain = "LOCALKUBE-OUTPUT"

// EgressDrops returns how many packets the egress chain has dropped.
func (c Config) EgressDrops() (int, error) {
	out, err := c.Namespace().Run("iptables", "-w", "-nvxL", EgressChain)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 2 && fields[2] == "DROP" {
			var n int
			_, err := fmt.Sscan(fields[0], &n)
			return n, err
		}
	}
	return 0, fmt.Errorf("no DROP rule in chain %s:\n%s", EgressChain, out)
}
