package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status prints each component's process, the API server's readiness and
// the nodes. It returns an error when the cluster is not fully up.
func (c Config) Status(ctx context.Context, out io.Writer) error {
	c, startedAt, err := c.LoadSaved()
	if err != nil {
		if left := c.Leftovers(); len(left) > 0 {
			return fmt.Errorf("no cluster recorded, yet found %v: run `localkube down`", left)
		}
		fmt.Fprintln(out, "No cluster is up")
		return ErrNotUp
	}
	fmt.Fprintf(out, "Cluster up since %s (%s)\n", startedAt.Format(time.RFC3339), time.Since(startedAt).Round(time.Second))
	down := 0
	for _, comp := range c.components() {
		if pid := c.Daemon(comp.name).PID(); pid != 0 {
			fmt.Fprintf(out, "  %-24s running (PID %d)\n", comp.name, pid)
		} else {
			fmt.Fprintf(out, "  %-24s STOPPED (log: %s)\n", comp.name, c.Daemon(comp.name).LogFile)
			down++
		}
	}
	k, err := newClient(c.Kubeconfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := k.readyz(ctx); err != nil {
		return fmt.Errorf("API server not ready: %w", err)
	}
	nodes, err := k.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		state := "NotReady"
		if isReady(&nodes.Items[i]) {
			state = "Ready"
		}
		if node := &nodes.Items[i]; node.Labels["type"] == "kwok" {
			pods := node.Status.Allocatable[corev1.ResourcePods]
			state += fmt.Sprintf(" (simulated, %d pods)", pods.Value())
		}
		fmt.Fprintf(out, "  node %-19s %s\n", nodes.Items[i].Name, state)
	}
	fmt.Fprintf(out, "KUBECONFIG=%s\n", c.Kubeconfig())
	if down > 0 {
		return fmt.Errorf("%d components are not running", down)
	}
	return nil
}

// ErrNotUp means no cluster is running.
var ErrNotUp = fmt.Errorf("no cluster is up")
