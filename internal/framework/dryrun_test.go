package framework_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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

// startRendering starts a manager running a renderingActor in a namespace
// of its own.
func startRendering(t *testing.T) (client.Client, string, *widgetActor) {
	t.Helper()
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.Actor = renderingActor{a}
	startManager(t, cfg, ns, opts)
	return c, ns, a
}

// TestInvalidChildrenAreInvalidSpec runs the children's dry run in the
// controller, as it runs when the webhooks are off: a spec whose children
// the API server would reject is InvalidSpec with the field it names,
// before Declare applies anything; fixed, the object reconciles.
func TestInvalidChildrenAreInvalidSpec(t *testing.T) {
	c, ns, a := startRendering(t)

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

// defaultingRenderer is a renderingActor with a Defaulter, so that it has
// a mutating webhook.
type defaultingRenderer struct{ renderingActor }

func (defaultingRenderer) Default(*testapi.Widget) {}

// TestWebhookChecksChildrenOnce has the children of a Widget dry-run by
// the mutating webhook, which records their hash in
// ChildrenCheckedAnnotation: the validating webhook then checks them no
// more, nor does an update that leaves them alone (even one that drops
// the annotation); children the API server rejects are left unrecorded by
// the mutating webhook and refused by the validating one, with the spec's
// field.
func TestWebhookChecksChildrenOnce(t *testing.T) {
	cfg, _, ns := setup(t)
	ctx := context.Background()
	var dryRuns atomic.Int32
	inner, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(inner, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			dryRuns.Add(1) // the checker's only applies are dry runs
			return c.Apply(ctx, obj, opts...)
		},
	})
	mutating, validating := framework.AdmissionHooks[*testapi.Widget](c, scheme, widgetKind,
		defaultingRenderer{renderingActor{newActor("a", newFlowLog())}})
	send := func(hook *admission.Webhook, op admissionv1.Operation, old, obj *testapi.Widget) admission.Response {
		t.Helper()
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "uid", Name: obj.Name, Namespace: ns, Operation: op,
			Kind:     metav1.GroupVersionKind{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Kind: "Widget"},
			Resource: metav1.GroupVersionResource{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Resource: "widgets"},
		}}
		for raw, o := range map[*k8sruntime.RawExtension]*testapi.Widget{&req.Object: obj, &req.OldObject: old} {
			if o != nil {
				data, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				raw.Raw = data
			}
		}
		return hook.Handle(ctx, req)
	}
	// mutate sends obj through the mutating webhook and returns it with the
	// annotation the webhook recorded ("" for none).
	mutate := func(op admissionv1.Operation, old, obj *testapi.Widget) (*testapi.Widget, string) {
		t.Helper()
		resp := send(mutating, op, old, obj)
		if !resp.Allowed {
			t.Fatalf("the mutating webhook refused %s: %v", obj.Name, resp.Result)
		}
		obj = obj.DeepCopy()
		for _, p := range resp.Patches {
			switch {
			case p.Path == "/metadata/annotations":
				for k, v := range p.Value.(map[string]any) {
					metav1.SetMetaDataAnnotation(&obj.ObjectMeta, k, v.(string))
				}
			case strings.HasPrefix(p.Path, "/metadata/annotations/"):
				metav1.SetMetaDataAnnotation(&obj.ObjectMeta, strings.ReplaceAll(strings.TrimPrefix(p.Path, "/metadata/annotations/"), "~1", "/"), p.Value.(string))
			}
		}
		return obj, obj.Annotations[framework.ChildrenCheckedAnnotation]
	}

	w := newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1, Config: map[string]string{"disk": "ssd"}})
	w, checked := mutate(admissionv1.Create, nil, w)
	want, err := framework.ChildrenHash(scheme, renderingActor{}.RenderChildren(w))
	if err != nil {
		t.Fatal(err)
	}
	if checked != want || dryRuns.Load() != 1 {
		t.Fatalf("create: annotation %q after %d dry runs, want %q after 1", checked, dryRuns.Load(), want)
	}
	if resp := send(validating, admissionv1.Create, nil, w); !resp.Allowed || dryRuns.Load() != 1 {
		t.Errorf("the validating webhook after the mutating one: allowed %v, %d dry runs in all, want allowed after 1", resp.Allowed, dryRuns.Load())
	}

	// An update that leaves the children alone, sent without the
	// annotation: recorded again, not dry-run.
	changed := w.DeepCopy()
	changed.Spec.Replicas = 2
	changed.Annotations = nil
	if _, again := mutate(admissionv1.Update, w, changed); again != want || dryRuns.Load() != 1 {
		t.Errorf("an update of the replicas: annotation %q after %d dry runs in all, want %q after 1", again, dryRuns.Load(), want)
	}
	// Other children are dry-run and recorded.
	changed.Spec.Config = map[string]string{"disk": "hdd"}
	if _, again := mutate(admissionv1.Update, w, changed); again == want || again == "" || dryRuns.Load() != 2 {
		t.Errorf("an update of the children: annotation %q after %d dry runs in all, want a new hash after 2", again, dryRuns.Load())
	}
	// Children the API server rejects: not recorded, then refused by the
	// validating webhook, naming the field.
	bad := newWidget(ns, "bad", testapi.WidgetSpec{Config: map[string]string{"bad key!": "x"}})
	if bad, checked := mutate(admissionv1.Create, nil, bad); checked != "" {
		t.Errorf("invalid children: annotation %q, want none", checked)
	} else if resp := send(validating, admissionv1.Create, nil, bad); resp.Allowed || resp.Result == nil ||
		resp.Result.Code != 422 || !strings.Contains(resp.Result.Message, "spec.config") {
		t.Errorf("invalid children, validated: allowed %v, result %v; want a 422 naming spec.config", resp.Allowed, resp.Result)
	}
}

// TestControllerTrustsCheckedChildren: the controller does not dry-run
// children whose hash ChildrenCheckedAnnotation records, so that a
// cluster admitted by the webhook costs no second dry run. Shown with a
// forged annotation on children the API server would reject: the
// controller applies them instead of reporting InvalidSpec (what it does
// without the annotation, TestInvalidChildrenAreInvalidSpec).
func TestControllerTrustsCheckedChildren(t *testing.T) {
	c, ns, a := startRendering(t)

	w := newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1, Config: map[string]string{"bad key!": "x"}})
	hash, err := framework.ChildrenHash(scheme, renderingActor{}.RenderChildren(w))
	if err != nil {
		t.Fatal(err)
	}
	w.Annotations = map[string]string{framework.ChildrenCheckedAnnotation: hash}
	create(t, c, w)
	w = waitWidget(t, c, ns, "w", "a pass past the children's check", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionSynced).ObservedGeneration == w.Generation && a.declares.Load() > 0
	})
	if s := condition(w, framework.ConditionSynced); s.Reason == framework.ReasonInvalidSpec {
		t.Errorf("Synced = %s/%s %q: the controller dry-ran the children the annotation vouched for", s.Status, s.Reason, s.Message)
	}
}
