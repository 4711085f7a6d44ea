package zookeeper

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEnsembleRevision: the probe targets' shared Revision changes when any
// server pod changes, so every server is asked again (a survivor's answer
// depends on its peers), and stays put while none does, so idle clusters
// are not probed more often.
func TestEnsembleRevision(t *testing.T) {
	pods := func(versions ...string) map[int]*corev1.Pod {
		out := map[int]*corev1.Pod{}
		for i, v := range versions {
			out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: v}}
		}
		return out
	}
	base := ensembleRevision(pods("10", "11", "12"))
	if got := ensembleRevision(pods("10", "11", "12")); got != base {
		t.Errorf("unchanged pods: %q, then %q", base, got)
	}
	for name, changed := range map[string]map[int]*corev1.Pod{
		"another pod changed": pods("10", "11", "13"),
		"a pod is gone":       pods("10", "11"),
		"a pod was added":     pods("10", "11", "12", "14"),
		"versions swapped":    pods("11", "10", "12"),
	} {
		if got := ensembleRevision(changed); got == base {
			t.Errorf("%s: revision still %q", name, got)
		}
	}
}
