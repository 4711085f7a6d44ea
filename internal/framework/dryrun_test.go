package framework_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// widgetKind names the owner in the dry-run errors.
var widgetKind = schema.GroupKind{Group: testapi.GroupVersion.Group, Kind: "Widget"}

// TestCheckChildren dry-runs rendered children on a real API server: the
// API server's own validation errors come back on the owner's spec fields
// the sources name, every child's at once; children that are valid pass,
// also when one of them exists and holds a node port (an apply, not a
// create, so the port it holds is no conflict).
func TestCheckChildren(t *testing.T) {
	_, c, ns := setup(t)
	ctx := context.Background()
	service := func(annotations map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-client", Annotations: annotations},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeNodePort,
				Selector: map[string]string{"app": "w"},
				Ports:    []corev1.ServicePort{{Name: "client", Port: 2181, NodePort: 30123}},
			},
		}
	}
	serviceSources := map[string]string{"metadata.annotations": "spec.service.annotations", "spec.ports[0].nodePort": "spec.service.nodePort"}
	pods := func(nodeSelector map[string]string, tolerations []corev1.Toleration) framework.RenderedChild {
		d := deployment("w", map[string]string{"app": "w"}, "w-config")
		d.Namespace = ns
		d.Spec.Template.Spec.NodeSelector = nodeSelector
		d.Spec.Template.Spec.Tolerations = tolerations
		// The replicas come from nowhere in the spec: an error there is
		// reported on spec, naming the child.
		d.Spec.Replicas = ptr.To[int32](-1)
		return framework.RenderedChild{Object: d, Sources: map[string]string{
			"spec.template.spec.nodeSelector": "spec.nodeSelector",
			"spec.template.spec.tolerations":  "spec.tolerations",
		}}
	}

	err := framework.CheckChildren(ctx, c, scheme, widgetKind, "w", []framework.RenderedChild{
		pods(map[string]string{"bad key!": "x"}, []corev1.Toleration{{Key: "k", Operator: "Sometimes"}}),
		{Object: service(map[string]string{"bad key!": "x"}), Sources: serviceSources},
	})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("CheckChildren of invalid children = %v, want a 422 Invalid", err)
	}
	status := err.(apierrors.APIStatus).Status()
	var fields []string
	for _, cause := range status.Details.Causes {
		fields = append(fields, cause.Field)
	}
	for _, want := range []string{"spec.nodeSelector", "spec.tolerations[0].operator", "spec.service.annotations", "spec"} {
		if !strings.Contains(" "+strings.Join(fields, " ")+" ", " "+want+" ") {
			t.Errorf("the causes name %v, want %s among them", fields, want)
		}
	}
	if d := status.Details; d.Kind != "Widget" || d.Name != "w" {
		t.Errorf("the error is about %s %s, want Widget w", d.Kind, d.Name)
	}
	for _, want := range []string{`Widget.` + widgetKind.Group + ` "w" is invalid`, `Unsupported value: "Sometimes"`, "the Deployment w made from it would be invalid: spec.replicas"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %q:\n%v", want, err)
		}
	}

	// Created for real, the Service holds its node port; the same Service
	// dry-run again is valid.
	if err := c.Create(ctx, service(nil)); err != nil {
		t.Fatal(err)
	}
	if err := framework.CheckChildren(ctx, c, scheme, widgetKind, "w", []framework.RenderedChild{
		{Object: service(map[string]string{"example.com/lb": "internal"}), Sources: serviceSources},
	}); err != nil {
		t.Errorf("CheckChildren of a valid existing Service with its node port = %v, want nil", err)
	}
	var stored corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-client"}, &stored); err != nil || len(stored.Annotations) != 0 {
		t.Errorf("the dry run changed the stored Service: %v %v", stored.Annotations, err)
	}
}

// renderingActor is a widget actor whose Deployment's node selector comes
// from spec.config, rendered for the children's dry run.
type renderingActor struct{ *widgetActor }

func (renderingActor) RenderChildren(w *testapi.Widget) []framework.RenderedChild {
	d := deployment(w.Name, map[string]string{"app": w.Name}, w.Name+"-config")
	d.Namespace = w.Namespace
	d.Spec.Template.Spec.NodeSelector = w.Spec.Config
	return []framework.RenderedChild{{Object: d, Sources: map[string]string{"spec.template.spec.nodeSelector": "spec.config"}}}
}

// TestInvalidChildrenAreInvalidSpec runs the children's dry run in the
// controller, as it runs when the webhooks are off: a spec whose children
// the API server would reject is InvalidSpec with the field it names,
// before Declare applies anything; fixed, the object reconciles.
func TestInvalidChildrenAreInvalidSpec(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.Actor = renderingActor{a}
	startManager(t, cfg, ns, opts)

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1, Config: map[string]string{"bad key!": "x"}}))
	w := waitWidget(t, c, ns, "w", "Synced=False/InvalidSpec", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionSynced).Reason == framework.ReasonInvalidSpec
	})
	if msg := condition(w, framework.ConditionSynced).Message; !strings.Contains(msg, `spec.config: Invalid value: "bad key!"`) {
		t.Errorf("Synced's message %q does not name spec.config and the key", msg)
	}
	if n := a.declares.Load(); n != 0 {
		t.Errorf("Declare ran %d times on a spec whose children are invalid", n)
	}
	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Config = map[string]string{"disk": "ssd"} })
	waitWidget(t, c, ns, "w", "Synced=True after fixing the spec", inSync)
}
