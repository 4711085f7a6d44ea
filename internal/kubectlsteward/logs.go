package kubectlsteward

import (
	"context"
	"fmt"
	"io"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaderElectionID is the name of the Lease Steward's replicas elect their
// leader with (manager.LeaderElectionID; a test keeps them equal, without
// linking the operator's controllers into the plugin).
const leaderElectionID = "steward.steward.dev"

// LogsOptions are the logs command's.
type LogsOptions struct {
	// Namespace is where Steward runs (the chart's release namespace).
	Namespace string
	// Tail is how many of the last lines to show; negative: all.
	Tail int64
	// Follow streams the log until interrupted.
	Follow bool
}

// Leader returns the operator pod that leads: the holder of Steward's
// Lease in namespace (its identity is "<pod>_<uuid>").
func (c *CLI) Leader(ctx context.Context, namespace string) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaderElectionID}, lease); err != nil {
		return "", fmt.Errorf("read the Lease %s/%s Steward's replicas elect a leader with (is Steward installed there? --operator-namespace): %w",
			namespace, leaderElectionID, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	pod, _, _ := strings.Cut(holder, "_")
	if pod == "" {
		return "", fmt.Errorf("no replica holds the Lease %s/%s: none leads", namespace, leaderElectionID)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod}, &corev1.Pod{}); err != nil {
		return "", fmt.Errorf("the Lease names %s, which is not a pod of %s (a replica that just stopped?): %w", pod, namespace, err)
	}
	return pod, nil
}

// Logs writes the leading replica's log.
func (c *CLI) Logs(ctx context.Context, o LogsOptions) error {
	pod, err := c.Leader(ctx, o.Namespace)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{Follow: o.Follow}
	if o.Tail >= 0 {
		opts.TailLines = &o.Tail
	}
	fmt.Fprintf(c.Err, "The leader is %s/%s\n", o.Namespace, pod)
	stream, err := cs.CoreV1().Pods(o.Namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("the log of %s: %w", pod, err)
	}
	defer stream.Close()
	_, err = io.Copy(c.Out, stream)
	return err
}
