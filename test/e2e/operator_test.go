//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOperatorInCluster installs Steward from config/default with its image
// built on this machine, and checks that the manager becomes Ready (its
// readiness probe answers), takes the leader-election Lease under its own
// ServiceAccount's RBAC, and keeps running.
func TestOperatorInCluster(t *testing.T) {
	if out, err := localkube("load-image", env.operator); err != nil {
		t.Fatalf("load operator image (run `make images`): %v: %s", err, out)
	}
	kustomization := env.root + "/config/default"
	if out, err := kubectl("apply", "-k", kustomization); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := kubectl("delete", "-k", kustomization, "--wait=true", "--timeout=2m"); err != nil {
			t.Logf("uninstall: %v: %s", err, out)
		}
	})
	const ns, name = "steward-system", "steward-controller-manager"
	eventually(t, 3*time.Minute, "the manager Deployment is available", func(ctx context.Context) error {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 1 || d.Status.UpdatedReplicas != 1 {
			return fmt.Errorf("ready %d, updated %d", d.Status.ReadyReplicas, d.Status.UpdatedReplicas)
		}
		return nil
	})
	eventually(t, time.Minute, "the manager holds the leader-election Lease", func(ctx context.Context) error {
		leases, err := env.client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, name) {
				return nil
			}
		}
		return fmt.Errorf("no Lease held by a %s pod among %d", name, len(leases.Items))
	})
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller-manager"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("manager pods: %v, %v", pods, err)
	}
	pod := pods.Items[0]
	if restarts := pod.Status.ContainerStatuses[0].RestartCount; restarts != 0 {
		t.Errorf("the manager restarted %d times", restarts)
	}
	if uid := pod.Spec.SecurityContext.RunAsUser; uid == nil || *uid == 0 {
		t.Errorf("the manager runs as root")
	}
	logs, err := kubectl("logs", "-n", ns, pod.Name)
	if err != nil {
		t.Fatalf("%v: %s", err, logs)
	}
	if !strings.Contains(strings.ToLower(logs), "successfully acquired lease") {
		t.Errorf("the manager's log does not show it acquired the lease:\n%s", logs)
	}
}
