package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

var webhookScheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(testapi.AddToScheme(s))
	return s
}()

// hookedWidgets is an actor with every admission hook. Its rules:
//   - Default: replicas 1 when unset; config["size"], derived from
//     replicas, when unset;
//   - DefaultUpdate: a derived config["size"] follows a change of replicas;
//   - Validate: replicas must be defaulted and not negative, config["bad"]
//     is forbidden, and spec.flow picks an error of another shape;
//   - Warnings: an even replica count;
//   - ValidateUpdate: spec.flow cannot change once the stored status
//     names a ConfigMap.
type hookedWidgets struct{ noopActor }

type noopActor struct{}

func (noopActor) Observe(*Context[*testapi.Widget], Nothing) (Action[*testapi.Widget], error) {
	return nil, nil
}
func (noopActor) Finalize(*Context[*testapi.Widget]) (bool, error) { return true, nil }

func (hookedWidgets) Default(w *testapi.Widget) {
	if w.Spec.Replicas == 0 {
		w.Spec.Replicas = 1
	}
	if _, ok := w.Spec.Config["size"]; !ok {
		if w.Spec.Config == nil {
			w.Spec.Config = map[string]string{}
		}
		w.Spec.Config["size"] = strconv.Itoa(int(w.Spec.Replicas))
	}
}

func (hookedWidgets) DefaultUpdate(old, w *testapi.Widget) {
	if old.Spec.Replicas != w.Spec.Replicas && w.Spec.Config["size"] == strconv.Itoa(int(old.Spec.Replicas)) &&
		old.Spec.Config["size"] == w.Spec.Config["size"] {
		delete(w.Spec.Config, "size")
	}
}

func (hookedWidgets) Validate(w *testapi.Widget) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if w.Spec.Replicas == 0 {
		errs = append(errs, field.Required(spec.Child("replicas"), "Validate sees the object before defaults"))
	}
	if w.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), w.Spec.Replicas, "must not be negative"))
	}
	if _, ok := w.Spec.Config["bad"]; ok {
		errs = append(errs, field.Forbidden(spec.Child("config").Key("bad"), "this key is not allowed"))
	}
	switch w.Spec.Flow {
	case "plain":
		return errors.New("flow plain is not allowed")
	case "wrapped":
		return fmt.Errorf("checking the widget: %w", errs.ToAggregate())
	case "single":
		return field.Invalid(spec.Child("flow"), "single", "one field error")
	case "status":
		return apierrors.NewInvalid(schema.GroupKind{Group: "example.dev", Kind: "Other"}, "other",
			field.ErrorList{field.Invalid(spec.Child("flow"), "status", "an API status, as it is")})
	case "mixed":
		return utilerrors.NewAggregate([]error{field.Invalid(spec.Child("flow"), "mixed", "a field error"), errors.New("and another")})
	}
	return errs.ToAggregate()
}

func (hookedWidgets) Warnings(w *testapi.Widget) []string {
	if w.Spec.Replicas%2 == 0 {
		return []string{fmt.Sprintf("spec.replicas: %d is even", w.Spec.Replicas)}
	}
	return nil
}

func (hookedWidgets) ValidateUpdate(old, w *testapi.Widget) error {
	if old.Status.ConfigMap != "" && old.Spec.Flow != w.Spec.Flow {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "flow"),
			"cannot change once status.configMap is set")}.ToAggregate()
	}
	return nil
}

func widget(modify func(w *testapi.Widget)) *testapi.Widget {
	w := &testapi.Widget{
		TypeMeta:   metav1.TypeMeta{APIVersion: testapi.GroupVersion.String(), Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"},
	}
	if modify != nil {
		modify(w)
	}
	return w
}

func raw(t *testing.T, w *testapi.Widget) k8sruntime.RawExtension {
	t.Helper()
	if w == nil {
		return k8sruntime.RawExtension{}
	}
	data, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return k8sruntime.RawExtension{Raw: data}
}

// review sends one admission request through controller-runtime's
// handler of the hook, as the webhook server would.
func review(t *testing.T, hook *admission.Webhook, op admissionv1.Operation, old, obj *testapi.Widget) admission.Response {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid",
		Kind:      metav1.GroupVersionKind{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Kind: "Widget"},
		Resource:  metav1.GroupVersionResource{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Resource: "widgets"},
		Name:      "w",
		Namespace: "ns",
		Operation: op,
		Object:    raw(t, obj),
		OldObject: raw(t, old),
	}}
	return hook.Handle(context.Background(), req)
}

func hooks[T Object, S any](t *testing.T, actor Actor[T, S]) (mutating, validating *admission.Webhook) {
	t.Helper()
	m, v := newWebhookHooks(webhookScheme, testapi.GroupVersion.WithKind("Widget").GroupKind(), actor)
	if m != nil {
		mutating = &admission.Webhook{Handler: m}
	}
	if v != nil {
		validating = validatingWebhook[T](webhookScheme, testapi.GroupVersion.WithKind("Widget").GroupKind(), v)
	}
	return mutating, validating
}

// patchPaths returns the JSON patch operations of resp by operation and
// path.
func patchPaths(resp admission.Response) map[string]any {
	out := map[string]any{}
	for _, p := range resp.Patches {
		out[p.Operation+" "+p.Path] = p.Value
	}
	return out
}

func TestWebhookDefaulting(t *testing.T) {
	mutating, _ := hooks[*testapi.Widget](t, hookedWidgets{})
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		old, obj *testapi.Widget
		want     map[string]any // patch operations, by "op path"
	}{
		{"create: defaults as a patch", admissionv1.Create, nil, widget(nil), map[string]any{
			"add /spec/replicas": float64(1), "add /spec/config": map[string]any{"size": "1"},
		}},
		{"create: set fields stay", admissionv1.Create, nil,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 3, map[string]string{"size": "7"} }), map[string]any{}},
		{"update: a derived default follows (DefaultUpdate)", admissionv1.Update,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 1, map[string]string{"size": "1"} }),
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 3, map[string]string{"size": "1"} }),
			map[string]any{"replace /spec/config/size": "3"}},
		{"update: a value the user set stays", admissionv1.Update,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 1, map[string]string{"size": "9"} }),
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 3, map[string]string{"size": "9"} }),
			map[string]any{}},
		{"update: the stored object is defaulted before DefaultUpdate", admissionv1.Update,
			widget(nil), // replicas 0 is 1 once defaulted, with size 1
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 3, map[string]string{"size": "1"} }),
			map[string]any{"replace /spec/config/size": "3"}},
		{"delete: allowed untouched", admissionv1.Delete, widget(nil), nil, map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, mutating, tc.op, tc.old, tc.obj)
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			if got := patchPaths(resp); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("patch %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWebhookDefaultingKeepsWhatTheUserWrote sends objects as a user
// writes them, not as Go marshals them: an explicit zero is not replaced
// by the default (the schema's validation then judges it), and an object
// that does not decode is let through undefaulted, for the schema's
// validation to name the field.
func TestWebhookDefaultingKeepsWhatTheUserWrote(t *testing.T) {
	mutating, _ := hooks[*testapi.Widget](t, hookedWidgets{})
	for _, tc := range []struct {
		name, spec string
		want       map[string]any
	}{
		{"an explicit zero stays", `{"replicas": 0}`, map[string]any{"add /spec/config": map[string]any{"size": "1"}}},
		{"an explicit empty value stays", `{"replicas": 2, "flow": ""}`, map[string]any{"add /spec/config": map[string]any{"size": "2"}}},
		{"unset fields are defaulted", `{}`, map[string]any{"add /spec/replicas": float64(1), "add /spec/config": map[string]any{"size": "1"}}},
		{"an object that does not decode is left to validation", `{"replicas": "three"}`, map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := fmt.Sprintf(`{"apiVersion": %q, "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": %s}`,
				testapi.GroupVersion.String(), tc.spec)
			resp := mutating.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID:       "uid",
				Kind:      metav1.GroupVersionKind{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Kind: "Widget"},
				Operation: admissionv1.Create,
				Object:    k8sruntime.RawExtension{Raw: []byte(obj)},
			}})
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			if got := patchPaths(resp); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("patch %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWebhookValidation(t *testing.T) {
	_, validating := hooks[*testapi.Widget](t, hookedWidgets{})
	even := func(w *testapi.Widget) { w.Spec.Replicas = 2 }
	type cause struct{ field, text string }
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		old, obj *testapi.Widget
		// want: nil to be allowed; otherwise the causes of the 422, or
		// none for an Invalid status without causes.
		want     []cause
		message  string // in the denial's message
		warnings []string
	}{
		{"create: valid, defaulted before Validate", admissionv1.Create, nil, widget(nil), nil, "", nil},
		{"create: a field.ErrorList names each field", admissionv1.Create, nil,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = -1, map[string]string{"bad": "x"} }),
			[]cause{{"spec.replicas", "must not be negative"}, {"spec.config[bad]", "this key is not allowed"}},
			`Widget.test.framework.steward.dev "w" is invalid`, nil},
		{"create: a wrapped aggregate", admissionv1.Create, nil,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Flow = -1, "wrapped" }),
			[]cause{{"spec.replicas", "must not be negative"}}, "spec.replicas: Invalid value: -1", nil},
		{"create: one field error", admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Flow = "single" }),
			[]cause{{"spec.flow", "one field error"}}, "", nil},
		{"create: an API status as it is", admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Flow = "status" }),
			[]cause{{"spec.flow", "an API status, as it is"}}, `Other.example.dev "other" is invalid`, nil},
		{"create: a plain error is Invalid too", admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Flow = "plain" }),
			[]cause{}, `Widget.test.framework.steward.dev "w" is invalid: flow plain is not allowed`, nil},
		{"create: an aggregate with other errors", admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Flow = "mixed" }),
			[]cause{}, "and another", nil},
		{"create: a warning", admissionv1.Create, nil, widget(even), nil, "", []string{"spec.replicas: 2 is even"}},
		{"create: warnings come with a denial", admissionv1.Create, nil,
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Spec.Config = 2, map[string]string{"bad": "x"} }),
			[]cause{{"spec.config[bad]", "this key is not allowed"}}, "", []string{"spec.replicas: 2 is even"}},
		{"update: a new warning", admissionv1.Update, widget(nil), widget(even), nil, "", []string{"spec.replicas: 2 is even"}},
		{"update: a warning already given is not repeated", admissionv1.Update, widget(even),
			widget(func(w *testapi.Widget) { even(w); w.Spec.Flow = "other" }), nil, "", nil},
		{"update: a spec made invalid", admissionv1.Update, widget(nil), widget(func(w *testapi.Widget) { w.Spec.Replicas = -1 }),
			[]cause{{"spec.replicas", "must not be negative"}}, "", nil},
		{"update: metadata of an invalid stored object is not validated", admissionv1.Update,
			widget(func(w *testapi.Widget) { w.Spec.Replicas = -2 }),
			widget(func(w *testapi.Widget) {
				w.Spec.Replicas, w.Finalizers, w.Labels = -2, []string{"x"}, map[string]string{"a": "b"}
			}),
			nil, "", nil},
		{"update: nor its status", admissionv1.Update,
			widget(func(w *testapi.Widget) { w.Spec.Replicas = -2 }),
			widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Status.ConfigMap = -2, "cm" }),
			nil, "", nil},
		{"update: a change the stored object's status forbids", admissionv1.Update,
			widget(func(w *testapi.Widget) { w.Status.ConfigMap = "cm" }),
			widget(func(w *testapi.Widget) { w.Spec.Flow = "other" }),
			[]cause{{"spec.flow", "cannot change once status.configMap is set"}}, "", nil},
		{"update: the same change, allowed by the stored status", admissionv1.Update,
			widget(nil), widget(func(w *testapi.Widget) { w.Spec.Flow = "other" }), nil, "", nil},
		{"delete: allowed", admissionv1.Delete, widget(func(w *testapi.Widget) { w.Spec.Replicas = -1 }), nil, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, validating, tc.op, tc.old, tc.obj)
			if !slices.Equal(resp.Warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", resp.Warnings, tc.warnings)
			}
			if tc.want == nil {
				if !resp.Allowed {
					t.Errorf("denied: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed {
				t.Fatal("allowed, want a 422 Invalid")
			}
			// The API server returns this status to the client.
			err := &apierrors.StatusError{ErrStatus: *resp.Result}
			if !apierrors.IsInvalid(err) || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Errorf("status %d %s, want 422 Invalid: %v", resp.Result.Code, resp.Result.Reason, err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q does not contain %q", err.Error(), tc.message)
			}
			var got []cause
			if d := resp.Result.Details; d != nil {
				for _, c := range d.Causes {
					got = append(got, cause{c.Field, c.Message})
				}
			}
			for _, want := range tc.want {
				if !slices.ContainsFunc(got, func(c cause) bool { return c.field == want.field && strings.Contains(c.text, want.text) }) {
					t.Errorf("causes %+v lack %+v", got, want)
				}
				if !strings.Contains(err.Error(), want.field) || !strings.Contains(err.Error(), want.text) {
					t.Errorf("message %q does not name %s and %q", err.Error(), want.field, want.text)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("causes %+v, want %+v", got, tc.want)
			}
		})
	}
}

// onlyValidates has a validator and no defaulter: the webhook validates
// the object as it comes, and no mutating webhook exists.
type onlyValidates struct{ noopActor }

func (onlyValidates) Validate(w *testapi.Widget) error {
	if w.Spec.Replicas == 0 {
		return field.Required(field.NewPath("spec", "replicas"), "")
	}
	return nil
}

func TestWebhookHooksPresent(t *testing.T) {
	m, v := hooks[*testapi.Widget](t, onlyValidates{})
	if m != nil || v == nil {
		t.Fatalf("a Validator alone: mutating %v, validating %v; want only a validating webhook", m != nil, v != nil)
	}
	if resp := review(t, v, admissionv1.Create, nil, widget(nil)); resp.Allowed {
		t.Error("an undefaulted object was validated as defaulted, with no Defaulter")
	}
	if m, v := hooks[*testapi.Widget](t, noopActor{}); m != nil || v != nil {
		t.Errorf("no hooks: mutating %v, validating %v", m != nil, v != nil)
	}
}

func TestSetupWebhooks(t *testing.T) {
	// The manager never starts: registering contacts no API server.
	newManager := func(t *testing.T, scheme *k8sruntime.Scheme) ctrl.Manager {
		t.Helper()
		mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
			Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return mgr
	}
	served := func(mgr ctrl.Manager, path string) bool {
		_, pattern := mgr.GetWebhookServer().WebhookMux().Handler(&http.Request{URL: &url.URL{Path: path}})
		return pattern == path
	}
	const (
		mutate   = "/mutate-test-framework-steward-dev-v1alpha1-widget"
		validate = "/validate-test-framework-steward-dev-v1alpha1-widget"
	)

	mgr := newManager(t, webhookScheme)
	if err := SetupWebhooks[*testapi.Widget](mgr, hookedWidgets{}); err != nil {
		t.Fatal(err)
	}
	if !served(mgr, mutate) || !served(mgr, validate) {
		t.Errorf("every hook: %s served %v, %s served %v; want both", mutate, served(mgr, mutate), validate, served(mgr, validate))
	}

	mgr = newManager(t, webhookScheme)
	if err := SetupWebhooks[*testapi.Widget](mgr, onlyValidates{}); err != nil {
		t.Fatal(err)
	}
	if served(mgr, mutate) || !served(mgr, validate) {
		t.Errorf("a Validator alone: %s served %v, %s served %v; want only the second", mutate, served(mgr, mutate), validate, served(mgr, validate))
	}

	if err := SetupWebhooks[*testapi.Widget](newManager(t, webhookScheme), noopActor{}); err == nil {
		t.Error("an actor without hooks: no error")
	}
	if err := SetupWebhooks[*testapi.Widget](newManager(t, k8sruntime.NewScheme()), hookedWidgets{}); err == nil {
		t.Error("a kind missing from the scheme: no error")
	}
}

// clashingWidgets refuses a Widget whose replicas another Widget of the
// namespace (read through the reader it is given) already has.
type clashingWidgets struct{ noopActor }

func (clashingWidgets) Clashes(ctx context.Context, r client.Reader, w *testapi.Widget) error {
	var list testapi.WidgetList
	if err := r.List(ctx, &list, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	for _, other := range list.Items {
		if other.Name != w.Name && other.Spec.Replicas == w.Spec.Replicas {
			return field.Duplicate(field.NewPath("spec", "replicas"), fmt.Sprintf("%d, Widget %s's", w.Spec.Replicas, other.Name))
		}
	}
	return nil
}

func TestWebhookRejectsClashes(t *testing.T) {
	other := widget(func(w *testapi.Widget) { w.Name, w.Spec.Replicas = "other", 3 })
	_, v := newWebhookHooks(webhookScheme, testapi.GroupVersion.WithKind("Widget").GroupKind(), Actor[*testapi.Widget, Nothing](clashingWidgets{}))
	if v == nil {
		t.Fatal("a ClashChecker alone gets no validating webhook")
	}
	v.reader = fake.NewClientBuilder().WithScheme(webhookScheme).WithObjects(other).Build()
	hook := admission.WithValidator[*testapi.Widget](webhookScheme, v)

	resp := review(t, hook, admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Replicas = 3 }))
	if resp.Allowed || resp.Result.Code != 422 || !strings.Contains(resp.Result.Message, "spec.replicas: Duplicate value: \"3, Widget other's\"") {
		t.Errorf("a clashing create: allowed %v, %+v", resp.Allowed, resp.Result)
	}
	if resp := review(t, hook, admissionv1.Create, nil, widget(func(w *testapi.Widget) { w.Spec.Replicas = 4 })); !resp.Allowed {
		t.Errorf("a create that clashes with nothing was refused: %+v", resp.Result)
	}
	// A label change on an object stored clashing is not held up.
	stored := widget(func(w *testapi.Widget) { w.Spec.Replicas = 3 })
	labeled := widget(func(w *testapi.Widget) { w.Spec.Replicas, w.Labels = 3, map[string]string{"a": "b"} })
	if resp := review(t, hook, admissionv1.Update, stored, labeled); !resp.Allowed {
		t.Errorf("a metadata-only update of a clashing object was refused: %+v", resp.Result)
	}
}

// TestWebhookNamesUndecodableFields sends objects that do not decode into
// Go: the validating webhook refuses each with a 422 naming the field,
// where the decoder's error names none.
func TestWebhookNamesUndecodableFields(t *testing.T) {
	_, validating := hooks[*testapi.Widget](t, hookedWidgets{})
	for _, tc := range []struct {
		name, object, field, text string
	}{
		{"a string for a number", `"spec":{"replicas":"many"}`, "spec.replicas", "cannot unmarshal string"},
		{"a time that does not parse", `"metadata":{"name":"w","creationTimestamp":"soon"}`, "metadata.creationTimestamp", `"soon"`},
		{"in an inline struct and a list", `"status":{"conditions":[{"type":"Ready"},{"type":"Synced","lastTransitionTime":"later"}]}`,
			"status.conditions[1].lastTransitionTime", `"later"`},
		{"a map's value", `"spec":{"config":{"b":"ok","a":1}}`, "spec.config[a]", "cannot unmarshal number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := `{"apiVersion":"` + testapi.GroupVersion.String() + `","kind":"Widget",` + tc.object + `}`
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					UID: "uid", Name: "w", Namespace: "ns", Operation: op,
					Kind:      metav1.GroupVersionKind{Group: testapi.GroupVersion.Group, Version: testapi.GroupVersion.Version, Kind: "Widget"},
					Object:    k8sruntime.RawExtension{Raw: []byte(obj)},
					OldObject: raw(t, widget(nil)),
				}}
				resp := validating.Handle(context.Background(), req)
				if resp.Allowed || resp.Result == nil {
					t.Fatalf("%s: allowed, want a 422", op)
				}
				err := &apierrors.StatusError{ErrStatus: *resp.Result}
				if !apierrors.IsInvalid(err) || resp.Result.Details == nil || len(resp.Result.Details.Causes) != 1 ||
					resp.Result.Details.Causes[0].Field != tc.field || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("%s: %v (%+v), want a 422 naming %s saying %s", op, err, resp.Result.Details, tc.field, tc.text)
				}
			}
		})
	}
}

func TestDecodeError(t *testing.T) {
	type spec struct {
		Timeout *metav1.Duration  `json:"timeout,omitempty"`
		Items   []metav1.Duration `json:"items,omitempty"`
	}
	type object struct {
		metav1.TypeMeta `json:",inline"`
		Spec            spec `json:"spec"`
	}
	for _, tc := range []struct {
		data, want string // want: the error; "" when it decodes
	}{
		{`{"spec":{"timeout":"5m"}}`, ""},
		{`{"spec":{"timeout":null}}`, ""},
		{`{"spec":{"timeout":"soon"}}`, `spec.timeout: Invalid value: "soon": time: invalid duration "soon"`},
		{`{"spec":{"items":["1s","2x"]}}`, `spec.items[1]: Invalid value: "2x": time: unknown unit "x" in duration "2x"`},
		{`{"kind":3,"spec":{}}`, `kind: Invalid value: "3": json: cannot unmarshal number`},
		{`[]`, ""}, // no field to blame: the decoder's own error stands
	} {
		got := ""
		if err := decodeError([]byte(tc.data), reflect.TypeFor[*object]()); err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("decodeError(%s) = %q, want %q", tc.data, got, tc.want)
		}
	}
}

// TestAdmissionReadsSecretsLive: the reader admission checks other objects
// with (SecretReader) takes a Secret the manager's cache (only Steward's
// own Secrets) does not hold from the API server, and every other kind
// from the cache.
func TestAdmissionReadsSecretsLive(t *testing.T) {
	s := k8sruntime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(testapi.AddToScheme(s))
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "users"}}
	widget := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	r := SecretReader(fake.NewClientBuilder().WithScheme(s).WithObjects(widget).Build(),
		fake.NewClientBuilder().WithScheme(s).WithObjects(users).Build())
	if err := r.Get(t.Context(), client.ObjectKeyFromObject(users), &corev1.Secret{}); err != nil {
		t.Errorf("a Secret only the API server has: %v", err)
	}
	var secrets corev1.SecretList
	if err := r.List(t.Context(), &secrets); err != nil || len(secrets.Items) != 1 {
		t.Errorf("Secrets listed: %d, %v", len(secrets.Items), err)
	}
	if err := r.Get(t.Context(), client.ObjectKeyFromObject(widget), &testapi.Widget{}); err != nil {
		t.Errorf("a Widget the cache has: %v", err)
	}
}
