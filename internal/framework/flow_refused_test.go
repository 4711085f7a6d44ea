package framework_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

// eventsOf lists the Events recorded in ns with reason.
func eventsOf(t *testing.T, c client.Client, ns, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list Events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestRefusedStepFailsTheFlow runs a step that sends a request the
// application refuses each time, polling it in between (the run after a
// refusal sends it again and reports not done; the next finds it refused):
// its failures add up across the polls, the flow fails after MaxAttempts,
// and a Warning Event says so.
func TestRefusedStepFailsTheFlow(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	var runs atomic.Int32
	opts.Flows = append(opts.Flows, framework.Flow[*testapi.Widget, *declaration]{
		Name: "refused",
		Steps: []framework.Step[*testapi.Widget, *declaration]{{Name: "send", Run: func(*Ctx, *declaration) (bool, error) {
			if runs.Add(1)%2 == 1 {
				return false, nil // sent: poll it
			}
			return false, errors.New("the request was refused")
		}}},
		MaxAttempts: 3,
		Poll:        20 * time.Millisecond,
		Backoff:     framework.Backoff{Initial: 20 * time.Millisecond, Max: 5 * time.Second},
	})
	startManager(t, cfg, ns, opts)

	create(t, c, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"},
		Spec: testapi.WidgetSpec{Replicas: 1, Flow: "refused", FlowToken: "1"}})
	w := waitWidget(t, c, ns, "w", "the flow to fail", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Name == "refused" && op.Phase == commonv1.PhaseFailed
	})
	if op := w.Status.Operation; op.Attempts != 3 || op.LastError != "the request was refused" {
		t.Fatalf("failed operation %+v, want 3 attempts and the refusal", op)
	}
	testenv.Eventually(t, "a Warning Event OperationFailed", func() (bool, string) {
		for _, e := range eventsOf(t, c, ns, framework.ReasonOperationFailed) {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "Operation refused failed at step send") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Events %v", eventsOf(t, c, ns, framework.ReasonOperationFailed))
	})
}
