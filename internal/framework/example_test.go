package framework_test

import (
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// WidgetContext is the framework context of a Widget.
type WidgetContext = framework.Context[*testapi.Widget]

// GadgetContext is the framework context of a Gadget.
type GadgetContext = framework.Context[*testapi.Gadget]

// gadgetSet is a complete controller on the framework: a Widget owns one
// Gadget per replica, waits for the Gadgets named in spec.dependsOn, and
// runs a two-step "restart" flow once per spec.flowToken.
type gadgetSet struct{}

// Default is the one defaulting function, shared with the webhook.
func (gadgetSet) Default(w *testapi.Widget) {
	if w.Spec.Replicas == 0 {
		w.Spec.Replicas = 1
	}
}

// Validate rejects what admission should have rejected.
func (gadgetSet) Validate(w *testapi.Widget) error {
	if w.Spec.Replicas < 0 {
		return errors.New("spec.replicas must not be negative")
	}
	return nil
}

// Dependencies declares the Gadgets the Widget waits for.
func (gadgetSet) Dependencies(c *WidgetContext) ([]framework.Dependency, error) {
	var deps []framework.Dependency
	for _, name := range c.Obj.Spec.DependsOn {
		deps = append(deps, framework.Dependency{Object: &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Name: name}}})
	}
	return deps, nil
}

// widgetSeen is what gadgetSet's Declare observed in a pass. The
// framework hands it to Observe and to the flow's steps of the same pass,
// typed: a step expecting anything else does not compile.
type widgetSeen struct {
	// gadgets are the Widget's Gadgets as applied.
	gadgets []*testapi.Gadget
}

// Declare applies the children on every pass, flows included (no write
// when nothing changed), and returns what it found.
func (gadgetSet) Declare(c *WidgetContext) (*widgetSeen, error) {
	w := c.Obj
	seen := &widgetSeen{}
	for i := range w.Spec.Replicas {
		g := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", w.Name, i)}}
		if err := c.Apply(g, "gadget"); err != nil {
			return nil, err
		}
		seen.gadgets = append(seen.gadgets, g)
	}
	if _, err := c.DeleteOrphans(&testapi.GadgetList{}); err != nil {
		return nil, err
	}
	return seen, nil
}

// Observe returns the one imperative action left, if any.
func (gadgetSet) Observe(c *WidgetContext, _ *widgetSeen) (framework.Action[*testapi.Widget], error) {
	w := c.Obj
	if token := w.Spec.FlowToken; token != "" {
		if op := c.Operation(); op == nil || op.Trigger != token {
			return framework.StartFlow[*testapi.Widget]("restart", token), nil
		}
	}
	return nil, nil
}

// Finalize has no external state to clean up; owner references take the
// children away.
func (gadgetSet) Finalize(*WidgetContext) (bool, error) { return true, nil }

// restart is a flow of two idempotent, non-blocking steps.
var restart = framework.Flow[*testapi.Widget, *widgetSeen]{
	Name: "restart",
	Steps: []framework.Step[*testapi.Widget, *widgetSeen]{
		{Name: "mark", Run: func(c *WidgetContext, seen *widgetSeen) (bool, error) {
			c.Event(corev1.EventTypeNormal, "Restarting", "Restarting %d Gadgets", len(seen.gadgets))
			return true, nil
		}},
		{Name: "wait-ready", Run: waitGadgetsReady},
	},
}

// waitGadgetsReady polls until every Gadget of the Widget is Ready at its
// current generation.
func waitGadgetsReady(c *WidgetContext, seen *widgetSeen) (bool, error) {
	var list testapi.GadgetList
	if err := c.Client.List(c, &list, client.InNamespace(c.Obj.Namespace),
		client.MatchingLabels(c.Selector("gadget"))); err != nil {
		return false, fmt.Errorf("list Gadgets: %w", err)
	}
	if len(list.Items) < len(seen.gadgets) {
		return false, nil // poll again later
	}
	for i := range list.Items {
		if ok, _ := framework.IsReady(&list.Items[i]); !ok {
			return false, nil
		}
	}
	return true, nil
}

// gadgetReady is the Gadgets' own controller: a Gadget has nothing to do,
// so every pass finds it in sync and the framework reports it Ready at its
// generation, which is what the Widget's wait-ready step waits for. It has
// no Declare, so it observes framework.Nothing.
type gadgetReady struct{}

func (gadgetReady) Observe(*GadgetContext, framework.Nothing) (framework.Action[*testapi.Gadget], error) {
	return nil, nil
}

func (gadgetReady) Finalize(*GadgetContext) (bool, error) { return true, nil }

// setupExample registers both controllers with a manager.
func setupExample(mgr ctrl.Manager) error {
	_, err := framework.Setup(mgr, framework.Options[*testapi.Widget, *widgetSeen]{
		Actor:  gadgetSet{},
		App:    "widget",
		PartOf: "example",
		Owns:   []client.Object{&testapi.Gadget{}},
		Flows:  []framework.Flow[*testapi.Widget, *widgetSeen]{restart},
	})
	if err != nil {
		return err
	}
	_, err = framework.Setup(mgr, framework.Options[*testapi.Gadget, framework.Nothing]{Actor: gadgetReady{}, PartOf: "example"})
	return err
}

// Example runs the gadgetSet and Gadget controllers in a manager.
// TestExample runs the same controllers against a real API server.
func Example() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := setupExample(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
