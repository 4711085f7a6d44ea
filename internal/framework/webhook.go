package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// UpdateDefaulter is implemented by actors whose defaults on an update
// depend on the stored object. The defaulting webhook calls
// DefaultUpdate(old, obj) on every update, with old defaulted, before
// Default(obj). It exists for defaults derived from other fields: the
// webhook writes them into the spec, where they look as if the user had
// set them, and DefaultUpdate lets them follow a change of the fields they
// derive from (typically by removing them, for Default to derive again).
// The controller never calls it: without webhooks, derived defaults are
// never stored, and Default derives them afresh on every pass.
type UpdateDefaulter[T Object] interface {
	DefaultUpdate(old, obj T)
}

// Warner is implemented by actors whose kind has specs that are valid but
// probably not what the user wants. The validating webhook returns the
// warnings with its answer (kubectl prints them, a client-go client hands
// them to its rest.WarningHandler) on a create, and on an update only the
// warnings the stored object did not already give, so that editing an
// unrelated field does not repeat them. Warnings never reject anything,
// and the controller does not act on them.
type Warner[T Object] interface {
	Warnings(obj T) []string
}

// SetupWebhooks registers the admission webhooks of T's kind on
// mgr.GetWebhookServer(), built on actor's hooks with controller-runtime's
// webhook builder, at the paths kubebuilder's webhook markers use:
//
//   - /mutate-<group with dashes>-<version>-<lowercase kind>, when actor is
//     a [Defaulter] or an [UpdateDefaulter]: on create and update, the
//     object is defaulted as the controller defaults it every pass, and the
//     difference is returned as a patch;
//   - /validate-<group with dashes>-<version>-<lowercase kind>, when actor
//     is a [Validator], a [Warner], a [ChildRenderer], a [ClashChecker], an [Admitter] or an [UpdateValidator]: on create and update, the defaulted
//     object is validated as the controller validates it every pass, so
//     that what the webhook admits the controller acts on. Deletes are
//     allowed. An update that changes nothing outside metadata and status
//     (labels, annotations, finalizers) is allowed without validation or
//     warnings: rules tightened after an object was stored must not block
//     its finalizer's removal, and the controller reports the stored spec
//     invalid (InvalidSpec) all the same. When actor is a [ChildRenderer],
//     a valid object's children are then dry-run on the API server (on an
//     update, only when they differ from the stored object's), and an
//     object whose children the API server would reject is rejected,
//     naming the spec fields they come from.
//
// A validation error reaches the user as a 422 Invalid status
// (apierrors.IsInvalid): an error carrying an API status (apierrors.NewInvalid)
// as it is; a field.ErrorList's ToAggregate(), or a *field.Error, wrapped
// or not, as apierrors.NewInvalid of those field errors, each naming its
// field; any other error as an Invalid status with its text. Return field
// errors from Validate: the field paths reach the user, and the framework's
// InvalidSpec condition shows the same text. An object that does not
// decode into T (a duration that does not parse: the schema takes any
// text for it) is refused the same way, naming the field.
//
// The webhook configurations themselves come from the markers; the
// controller keeps defaulting and validating on every pass, so it is safe
// without webhooks. SetupWebhooks fails when actor has none of the hooks.
func SetupWebhooks[T Object, S any](mgr ctrl.Manager, actor Actor[T, S]) error {
	gvk, err := kindOf[T](mgr.GetScheme())
	if err != nil {
		return err
	}
	m, v := newWebhookHooks(mgr.GetScheme(), gvk.GroupKind(), actor)
	if v != nil {
		v.checker = childrenChecker{client: mgr.GetClient(), scheme: mgr.GetScheme()}
		v.reader = SecretReader(mgr.GetClient(), mgr.GetAPIReader())
		v.live = mgr.GetAPIReader()
	}
	if m == nil && v == nil {
		return fmt.Errorf("framework: %T has no admission hooks (Defaulter, UpdateDefaulter, Validator or Warner) for %s", actor, gvk.Kind)
	}
	if m != nil && v != nil && v.renderer != nil {
		m.children = v // the mutating webhook dry-runs the children and records it
	}
	if m != nil {
		// Registered as a handler of its own (see webhookDefaulter.Handle),
		// at the path the builder would use.
		mgr.GetWebhookServer().Register(webhookPath("mutate", gvk), &admission.Webhook{Handler: m})
	}
	if v == nil {
		return nil
	}
	// Registered by hand too: the handler refuses an object that does not
	// decode naming the field (see validatingWebhook).
	mgr.GetWebhookServer().Register(webhookPath("validate", gvk), validatingWebhook[T](mgr.GetScheme(), gvk.GroupKind(), v))
	return nil
}

// webhookPath is the path of a webhook of gvk, "mutate" or "validate", as
// kubebuilder's markers and controller-runtime's builder name it.
func webhookPath(kind string, gvk schema.GroupVersionKind) string {
	return "/" + kind + "-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// newWebhookHooks returns the admission defaulter and validator of actor,
// nil when it has no hook of that side.
func newWebhookHooks[T Object, S any](scheme *runtime.Scheme, gk schema.GroupKind, actor Actor[T, S]) (*webhookDefaulter[T], *webhookValidator[T]) {
	d, _ := actor.(Defaulter[T])
	u, _ := actor.(UpdateDefaulter[T])
	v, _ := actor.(Validator[T])
	w, _ := actor.(Warner[T])
	r, _ := actor.(ChildRenderer[T])
	cc, _ := actor.(ClashChecker[T])
	ad, _ := actor.(Admitter[T])
	uv, _ := actor.(UpdateValidator[T])
	var m *webhookDefaulter[T]
	if d != nil || u != nil {
		m = &webhookDefaulter[T]{defaulter: d, update: u, decoder: admission.NewDecoder(scheme)}
	}
	var val *webhookValidator[T]
	if v != nil || w != nil || r != nil || cc != nil || ad != nil || uv != nil {
		val = &webhookValidator[T]{gk: gk, scheme: scheme, defaulter: d, validator: v, warner: w, renderer: r,
			clash: cc, admitter: ad, update: uv}
	}
	return m, val
}

// webhookDefaulter is the admission.Defaulter of an actor.
type webhookDefaulter[T Object] struct {
	defaulter Defaulter[T]
	update    UpdateDefaulter[T]
	decoder   admission.Decoder
	// children, when the actor renders children, dry-runs them and records
	// that it did (markChildrenChecked).
	children *webhookValidator[T]
}

// Handle answers a defaulting request with a JSON patch from the object as
// sent to the object defaulted. It is controller-runtime's defaulting
// handler but for two things, both about what a user wrote:
//
//   - A value the user wrote is never replaced by a default. Decoded into
//     Go, an explicit zero (replicas: 0, "", false) is indistinguishable
//     from an unset field, and the default would silently take its place
//     (replicas: 0 became 3). A patch operation that replaces a value the
//     decoding lost is dropped, so the schema's validation, which follows,
//     judges the value the user wrote.
//   - An object that does not decode (an unparsable quantity, say) is
//     admitted undefaulted: the schema's validation that follows rejects
//     it naming the field, where a decoder error names none.
//
// Like controller-runtime's, it never removes a field the Go type does not
// know or omits, and it leaves out what Go's marshaling alone would change.
func (h *webhookDefaulter[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj := newObject[T]()
	if err := h.decoder.DecodeRaw(req.Object, obj); err != nil {
		return admission.Allowed("not defaulted: it does not decode, and validation will say where: " + err.Error())
	}
	roundTrip, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := h.Default(admission.NewContextWithRequest(ctx, req), obj); err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: ptr.To(status.Status())}}
		}
		return admission.Denied(err.Error())
	}
	if h.children != nil {
		h.children.markChildrenChecked(ctx, req, obj)
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
	// What the decoding alone changed: Go's own marshaling (an empty
	// status, a null timestamp) and the values it lost.
	roundTripOps, err := jsonpatch.CreatePatch(req.Object.Raw, roundTrip)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	marshaling, lost := map[string]bool{}, map[string]bool{}
	for _, op := range roundTripOps {
		marshaling[op.Json()] = true
		if op.Operation == "remove" {
			lost[op.Path] = true
		}
	}
	resp.Patches = slices.DeleteFunc(resp.Patches, func(op jsonpatch.JsonPatchOperation) bool {
		return marshaling[op.Json()] || lost[op.Path] && (op.Operation == "remove" || op.Operation == "replace")
	})
	if len(resp.Patches) == 0 {
		resp.PatchType = nil
	}
	return resp
}

// Default defaults obj in place.
func (h *webhookDefaulter[T]) Default(ctx context.Context, obj T) error {
	if h.update != nil {
		req, err := admission.RequestFromContext(ctx)
		if err != nil {
			return fmt.Errorf("no admission request in the context: %w", err)
		}
		if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
			old := newObject[T]()
			if err := h.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("decode the stored object: %v", err))
			}
			if h.defaulter != nil {
				h.defaulter.Default(old)
			}
			h.update.DefaultUpdate(old, obj)
		}
	}
	if h.defaulter != nil {
		h.defaulter.Default(obj)
	}
	return nil
}

// webhookValidator is the admission.Validator of an actor.
type webhookValidator[T Object] struct {
	gk        schema.GroupKind
	scheme    *runtime.Scheme
	defaulter Defaulter[T]
	validator Validator[T]
	warner    Warner[T]
	renderer  ChildRenderer[T]
	clash     ClashChecker[T]
	admitter  Admitter[T]
	update    UpdateValidator[T]
	checker   childrenChecker
	// reader is what clash and admitter read other objects with (the
	// manager's client; a Secret it does not hold from the API server:
	// SecretReader).
	reader client.Reader
	// live reads from the API server, uncached: the StorageClasses a
	// volume growth needs (checkVolumeGrowth).
	live client.Reader
}

// ValidateCreate validates the defaulted obj, then its children.
func (h *webhookValidator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	obj = h.defaulted(obj)
	warnings := h.warnings(obj)
	if err := h.validate(obj); err != nil {
		return warnings, err
	}
	if err := h.clashes(ctx, obj); err != nil {
		return warnings, err
	}
	return h.checkChildren(ctx, warnings, nil, obj)
}

// ValidateUpdate validates the defaulted obj when anything outside
// metadata and status changed, and warns of what old did not already.
func (h *webhookValidator[T]) ValidateUpdate(ctx context.Context, old, obj T) (admission.Warnings, error) {
	old, obj = h.defaulted(old), h.defaulted(obj)
	same, err := sameBeyondMetadataAndStatus(old, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if same {
		return nil, nil
	}
	var warnings admission.Warnings
	before := h.warnings(old)
	for _, w := range h.warnings(obj) {
		if !slices.Contains(before, w) {
			warnings = append(warnings, w)
		}
	}
	if err := h.validate(obj); err != nil {
		return warnings, err
	}
	if h.update != nil {
		if err := h.update.ValidateUpdate(old, obj); err != nil {
			return warnings, invalid(h.gk, obj.GetName(), err)
		}
	}
	if err := h.clashes(ctx, obj); err != nil {
		return warnings, err
	}
	if h.renderer != nil && h.live != nil {
		if errs := checkVolumeGrowth(ctx, h.live, h.renderer.RenderChildren(old), h.renderer.RenderChildren(obj)); len(errs) > 0 {
			return warnings, apierrors.NewInvalid(h.gk, obj.GetName(), errs)
		}
	}
	return h.checkChildren(ctx, warnings, &old, obj)
}

// checkChildren has the API server validate the children the actor renders
// for obj (see ChildRenderer), unless they are those of old, the stored
// object (nil on a create), which were checked when it was admitted, or
// those the mutating webhook checked (ChildrenCheckedAnnotation). A check
// that could not be made admits obj with a warning saying so.
func (h *webhookValidator[T]) checkChildren(ctx context.Context, warnings admission.Warnings, old *T, obj T) (admission.Warnings, error) {
	if h.renderer == nil || h.checker.client == nil {
		return warnings, nil
	}
	children := h.renderer.RenderChildren(obj)
	after, errAfter := childrenHash(h.scheme, children)
	if errAfter == nil && obj.GetAnnotations()[ChildrenCheckedAnnotation] == after {
		return warnings, nil
	}
	if old != nil {
		before, errBefore := childrenHash(h.scheme, h.renderer.RenderChildren(*old))
		if errBefore == nil && errAfter == nil && before == after {
			return warnings, nil
		}
	}
	err := h.checker.check(ctx, h.gk, obj.GetName(), children)
	if errors.Is(err, errChildrenUnchecked) {
		ctrl.LoggerFrom(ctx).Info("Admitted without checking the children", "kind", h.gk.Kind, "name", obj.GetName(), "error", err.Error())
		return append(warnings, fmt.Sprintf("the objects this %s makes were not checked: %v", h.gk.Kind, err)), nil
	}
	return warnings, err
}

// markChildrenChecked, in the mutating webhook, has the API server dry-run
// the children of obj (defaulted) and records their hash in
// ChildrenCheckedAnnotation when it accepts them, for the validating
// webhook and the controller, which then check them no more. Children the
// stored object's annotation already vouches for (an update that leaves
// them alone, whatever the request says of the annotation) are not dry-run
// again. It refuses nothing: a spec Validate rejects, children the API
// server rejects and children that could not be checked are left
// unrecorded to the validating webhook, which checks them again and names
// the spec's fields, or admits with a warning (an invalid spec costs a
// second dry run; a valid one, its only). Like the validating webhook, it
// leaves alone an update that changes nothing outside metadata and status
// (a finalizer removed) and an object being deleted.
func (h *webhookValidator[T]) markChildrenChecked(ctx context.Context, req admission.Request, obj T) {
	if h.checker.client == nil || obj.GetDeletionTimestamp() != nil || h.validate(obj) != nil {
		return
	}
	stored := ""
	if req.Operation == admissionv1.Update {
		old := newObject[T]()
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return
		}
		if same, err := sameBeyondMetadataAndStatus(h.defaulted(old), obj); err != nil || same {
			return
		}
		stored = old.GetAnnotations()[ChildrenCheckedAnnotation]
	}
	children := h.renderer.RenderChildren(obj)
	hash, err := childrenHash(h.scheme, children)
	if err != nil {
		return
	}
	if obj.GetAnnotations()[ChildrenCheckedAnnotation] != hash && stored != hash &&
		h.checker.check(ctx, h.gk, obj.GetName(), children) != nil {
		return
	}
	obj.SetAnnotations(standard.Merge(obj.GetAnnotations(), map[string]string{ChildrenCheckedAnnotation: hash}))
}

// ValidateDelete allows every delete: finalizers do the cleanup, and
// refusing a delete would only leave the object behind.
func (h *webhookValidator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// defaulted returns a defaulted copy of obj: the object the controller
// validates. The mutating webhook has usually defaulted it already.
func (h *webhookValidator[T]) defaulted(obj T) T {
	if h.defaulter == nil {
		return obj
	}
	obj = obj.DeepCopyObject().(T)
	h.defaulter.Default(obj)
	return obj
}

func (h *webhookValidator[T]) warnings(obj T) admission.Warnings {
	if h.warner == nil {
		return nil
	}
	return h.warner.Warnings(obj)
}

// clashes asks the ClashChecker and the Admitter, if any, whether obj
// clashes with another object or refers to one it must not.
func (h *webhookValidator[T]) clashes(ctx context.Context, obj T) error {
	if h.reader == nil {
		return nil
	}
	if h.clash != nil {
		if err := h.clash.Clashes(ctx, h.reader, obj); err != nil {
			return invalid(h.gk, obj.GetName(), err)
		}
	}
	if h.admitter != nil {
		if err := h.admitter.Admit(ctx, h.reader, obj); err != nil {
			return invalid(h.gk, obj.GetName(), err)
		}
	}
	return nil
}

func (h *webhookValidator[T]) validate(obj T) error {
	if h.validator == nil {
		return nil
	}
	if err := h.validator.Validate(obj); err != nil {
		return invalid(h.gk, obj.GetName(), err)
	}
	return nil
}

// invalid turns a validation error into the 422 Invalid status the API
// server returns to the user (see SetupWebhooks).
func invalid(gk schema.GroupKind, name string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if errs := fieldErrors(err); len(errs) > 0 {
		return apierrors.NewInvalid(gk, name, errs)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name},
		Message: fmt.Sprintf("%s %q is invalid: %v", gk.String(), name, err),
	}}
}

// fieldErrors returns the field errors err is made of: the errors of an
// aggregate (field.ErrorList.ToAggregate) if all are field errors, or a
// single field error; nil otherwise.
func fieldErrors(err error) field.ErrorList {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var list field.ErrorList
		for _, e := range agg.Errors() {
			var fe *field.Error
			if !errors.As(e, &fe) {
				return nil
			}
			list = append(list, fe)
		}
		return list
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		return field.ErrorList{fe}
	}
	return nil
}

// sameBeyondMetadataAndStatus reports whether a and b are equal but for
// their metadata and status (and type meta).
func sameBeyondMetadataAndStatus(a, b runtime.Object) (bool, error) {
	strip := func(o runtime.Object) (map[string]any, error) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", o, err)
		}
		for _, k := range []string{"apiVersion", "kind", "metadata", "status"} {
			delete(u, k)
		}
		return u, nil
	}
	ua, err := strip(a)
	if err != nil {
		return false, err
	}
	ub, err := strip(b)
	if err != nil {
		return false, err
	}
	return equality.Semantic.DeepEqual(ua, ub), nil
}
