package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// notRestartable are the components Restart refuses: the forwarder, the
// host's only way in while it runs, and kwok, whose start creates the
// simulated nodes. down and up restart them.
var notRestartable = []string{"forwarder", "kwok"}

// Restart stops one running component of the cluster (SIGTERM, then
// SIGKILL after grace) and starts it again with the arguments up gave it,
// then waits until it serves as up waits: an API server restarted under
// load, a kubelet or containerd restarted under running pods (their
// containers outlive both). The chaos suite injects it as a fault.
func (c Config) Restart(ctx context.Context, name string, grace time.Duration, out io.Writer) error {
	return c.locked(func() error { return c.restart(ctx, name, grace, out) })
}

// restart is Restart with the lock held.
func (c Config) restart(ctx context.Context, name string, grace time.Duration, out io.Writer) error {
	c, _, err := c.LoadSaved()
	if err != nil {
		return fmt.Errorf("no cluster to restart %s in: %w", name, err)
	}
	var comp *component
	var names []string
	for _, cc := range c.components() {
		if !slices.Contains(notRestartable, cc.name) {
			names = append(names, cc.name)
			if cc.name == name {
				comp = &cc
			}
		}
	}
	if comp == nil {
		return fmt.Errorf("component %q cannot be restarted: want one of %v", name, names)
	}
	d := c.Daemon(name)
	pid := d.PID()
	if pid == 0 {
		return fmt.Errorf("%s is not running: nothing to restart", name)
	}
	start := time.Now()
	if err := d.Stop(grace); err != nil {
		return err
	}
	fmt.Fprintf(out, "Stopped %s (PID %d)\n", name, pid)
	u := &upper{Config: c, out: out, restarting: true}
	if name != "etcd" && name != "kube-apiserver" {
		// What waits for the kubelet and the DNS reads the API server.
		if u.client, err = newClient(c.Kubeconfig()); err != nil {
			return err
		}
	}
	if err := u.start(*comp); err != nil {
		return err
	}
	if err := u.waitFor(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s serves again after %s\n", name, time.Since(start).Round(100*time.Millisecond))
	return nil
}
