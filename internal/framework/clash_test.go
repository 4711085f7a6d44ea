package framework_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// clashingActor refuses a Widget whose replicas an older Widget of the
// namespace, not being deleted, has.
type clashingActor struct{ *widgetActor }

func (clashingActor) Clashes(ctx context.Context, r client.Reader, w *testapi.Widget) error {
	var list testapi.WidgetList
	if err := r.List(ctx, &list, client.InNamespace(w.Namespace)); err != nil {
		return fmt.Errorf("list Widgets: %w", err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID != w.UID && other.DeletionTimestamp == nil && other.Spec.Replicas == w.Spec.Replicas && framework.Older(other, w) {
			return field.ErrorList{field.Duplicate(field.NewPath("spec", "replicas"),
				fmt.Sprintf("%d, Widget %s's", w.Spec.Replicas, other.Name))}.ToAggregate()
		}
	}
	return nil
}

// TestClashIsNotReady: a Widget that clashes with an older one (as one
// created while no webhook ran would) says so in Ready, not only in
// Synced: kubectl get shows it not Ready, and why; with the older one
// gone, it goes on to Ready.
func TestClashIsNotReady(t *testing.T) {
	cfg, c, ns := setup(t)
	opts := testOptions(newActor("a", newFlowLog()))
	opts.Actor = clashingActor{newActor("a", newFlowLog())}
	startManager(t, cfg, ns, opts)

	first := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}, Spec: testapi.WidgetSpec{Replicas: 2}}
	create(t, c, first)
	waitWidget(t, c, ns, "first", "the first Widget Ready", func(w *testapi.Widget) bool {
		return framework.IsConditionTrue(w.Status.Conditions, framework.ConditionReady)
	})
	create(t, c, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}, Spec: testapi.WidgetSpec{Replicas: 2}})
	waitWidget(t, c, ns, "second", "the second Widget not Ready: Clash", func(w *testapi.Widget) bool {
		r := meta.FindStatusCondition(w.Status.Conditions, framework.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == framework.ReasonClash &&
			r.Message == `spec.replicas: Duplicate value: "2, Widget first's"`
	})
	if err := c.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	waitWidget(t, c, ns, "second", "the second Widget Ready once the first is gone", func(w *testapi.Widget) bool {
		return framework.IsConditionTrue(w.Status.Conditions, framework.ConditionReady)
	})
}
