package oceanbase_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsim"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestFlowPauseAndRescue makes OceanBase refuse DELETE SERVER during a
// scale-in: the step fails and is retried with backoff, the departing
// observer's pod stays; pausing the cluster holds the flow where it is;
// once OceanBase accepts the statement again, the framework's retry rescue
// on the resumed cluster finishes the flow.
func TestFlowPauseAndRescue(t *testing.T) {
	c, ns, p := setup(t, 79)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cluster serves", readyWith(c, ns, "ob", 4))

	p.setFaults(obsim.Fault{Match: `^alter system delete server`, Error: "injected: delete server refused"})
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones[0].Replicas = 1 })
	departing := build.PodName(ob, "z1", 1)
	testenv.Eventually(t, "the scale-in step fails and is retried", func() (bool, string) {
		op := get(t, c, ns, "ob").Status.Operation
		if op == nil || op.Name != "scale-in" || op.Attempts < 2 {
			return false, fmt.Sprintf("operation %+v", op)
		}
		return strings.Contains(op.LastError, "injected"), "last error " + op.LastError
	})
	requirePod(t, c, ns, departing)

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Paused = true })
	testenv.Eventually(t, "the cluster is paused", func() (bool, string) {
		o := get(t, c, ns, "ob")
		cond := meta.FindStatusCondition(o.Status.Conditions, framework.ConditionPaused)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == o.Generation,
			fmt.Sprintf("Paused %+v", cond)
	})
	p.setFaults()
	held := get(t, c, ns, "ob").Status.Operation
	time.Sleep(3 * time.Second) // a resync and more than a backoff: nothing moves
	if op := get(t, c, ns, "ob").Status.Operation; op.Step != held.Step || op.Phase != held.Phase || op.Attempts != held.Attempts {
		t.Fatalf("the paused flow moved: %+v, then %+v", held, op)
	}
	requirePod(t, c, ns, departing)

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) {
		ob.Spec.Paused = false
		metav1.SetMetaDataAnnotation(&ob.ObjectMeta, commonv1.RescueAnnotation, string(commonv1.RescueRetry))
	})
	testenv.Eventually(t, "the rescued scale-in ends", readyWith(c, ns, "ob", 3))
	if op := get(t, c, ns, "ob").Status.Operation; op.Name != "scale-in" || op.Phase != commonv1.PhaseSucceeded {
		t.Fatalf("the scale-in flow: %+v", op)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: departing}, &corev1.Pod{}); err == nil {
		t.Fatalf("the departed observer's pod %s is still there", departing)
	}
}

func requirePod(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{}); err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
}
