package cluster

import (
	"fmt"
	"strings"
)

// setupNetwork creates the cluster's namespace: loopback, the port-less node
// bridge carrying the node address and the default route, forwarding for the
// pod bridge, and the egress chain that counts and drops whatever would
// leave through the node bridge.
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
		{"iptables", "-w", "-I", "OUTPUT", "-o", NodeDevice, "!", "-d", NodeIP, "-j", EgressChain},
	}
	for _, argv := range steps {
		if _, err := ns.Run(argv...); err != nil {
			return fmt.Errorf("set up network namespace %s: %w", c.NetNS, err)
		}
	}
	return nil
}

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
