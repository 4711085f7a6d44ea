package matrixone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
)

// scaleCNSet sets a CNSet's replicas through its scale subresource, as a
// HorizontalPodAutoscaler does, and returns the scale it read first.
// It retries a conflict (the CNSet's status changed meanwhile), as an
// autoscaler does.
func scaleCNSet(t *testing.T, c client.Client, ns, name string, replicas int32) *autoscalingv1.Scale {
	t.Helper()
	var read *autoscalingv1.Scale
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn := &mov1.CNSet{}
		get2(t, c, ns, name, cn)
		scale := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(t.Context(), cn, scale); err != nil {
			return err
		}
		read = scale.DeepCopy()
		scale.Spec.Replicas = replicas
		return c.SubResource("scale").Update(t.Context(), cn, client.WithSubResourceBody(scale))
	})
	if err != nil {
		t.Fatal(err)
	}
	return read
}

// A group whose replicasFrom is CNSet leaves its CNSet's replicas to
// whoever scales it (an autoscaler, through the scale subresource); a
// group whose replicasFrom is Cluster takes them back.
func TestClusterLeavesAnAutoscaledGroupsReplicasToItsCNSet(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "a")
	replicas := func() string {
		return fmt.Sprint(ptr.Deref(get2(t, c, ns, "mo-a", &mov1.CNSet{}).Spec.Replicas, -1))
	}

	// The cluster owns the count: a scale of the CNSet is undone.
	read := scaleCNSet(t, c, ns, "mo-a", 2)
	if want := "app.kubernetes.io/"; !strings.Contains(read.Status.Selector, want) || read.Status.Replicas != 1 {
		t.Errorf("the scale subresource: status %+v, want the pods' selector and 1 ready", read.Status)
	}
	eventually(t, "the cluster setting its group's count back", func() (bool, string) { return replicas() == "1", replicas() })

	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.CNGroups[0].ReplicasFrom = mov1.ReplicasFromCNSet })
	eventually(t, "the cluster at its new generation", func() (bool, string) {
		mc := cluster(t, c, ns)
		return mc.Status.ObservedGeneration == mc.Generation, "not yet"
	})
	scaleCNSet(t, c, ns, "mo-a", 2)
	// The scale starts a pass of the cluster (it owns the CNSet), and
	// the CNSet's status changes as its second CN starts.
	time.Sleep(3 * time.Second)
	if got := replicas(); got != "2" {
		t.Fatalf("the CNSet's replicas %s after the autoscaler's 2: the cluster undid it", got)
	}
	if sets := cluster(t, c, ns).Status.Sets; len(sets) < 2 || sets[1].Name != "mo-a" || strings.Contains(sets[1].Reason, "waits") {
		t.Errorf("status.sets %+v: the group's change held, want none", sets)
	}

	// Back to the cluster: the group's replicas (1) again.
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.CNGroups[0].ReplicasFrom = mov1.ReplicasFromCluster })
	eventually(t, "the cluster taking the count back", func() (bool, string) { return replicas() == "1", replicas() })
}
