package kubectlsteward_test

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestLogsFindsTheLeader: logs reads the leader's pod from Steward's
// Lease (the operator's LeaderElectionID) and asks for its log (which
// envtest, running no kubelet, has empty; the e2e smoke reads a real
// one); it says when nothing leads
// and when Steward's Lease is not in the namespace.
func TestLogsFindsTheLeader(t *testing.T) {
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "operator-")
	kc := kubeconfig(t, cfg)
	logs := func() (string, error) { return plugin(t, kc, "default", "logs", "--operator-namespace", ns) }

	if out, err := logs(); err == nil || !strings.Contains(err.Error(), "is Steward installed there?") {
		t.Errorf("no Lease: %v: %s", err, out)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manager.LeaderElectionID}}
	if err := c.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	if out, err := logs(); err == nil || !strings.Contains(err.Error(), "none leads") {
		t.Errorf("a Lease nobody holds: %v: %s", err, out)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steward-7d9f-x2x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "steward"}}}}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("steward-7d9f-x2x_5b1c8e6a-0a4e-4f0e-9c61-3d2b7c1f9e10")
	if err := c.Update(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	out, err := logs()
	if !strings.Contains(out, "The leader is "+ns+"/steward-7d9f-x2x") || err != nil && !strings.Contains(err.Error(), "the log of steward-7d9f-x2x") {
		t.Errorf("a held Lease: %v: %s", err, out)
	}
}
