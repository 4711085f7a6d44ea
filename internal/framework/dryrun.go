package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ChildRenderer is implemented by actors whose specs carry fields that the
// API server validates only on the children the controller makes from
// them: embedded Kubernetes types (node selectors, tolerations, topology
// spread constraints, affinity), Service settings, quantities, labels and
// annotations. Without it such a spec is admitted and then fails on every
// pass, when the controller applies the child.
//
// RenderChildren returns the children the controller would apply for obj,
// which is defaulted and has passed Validate, as a new cluster of that
// spec gets them, each with the spec fields its fields come from. The
// validating webhook has the API server validate them without persisting
// anything (a server-side dry run of the same apply the controller makes)
// and rejects obj with a 422 naming the spec fields; the controller runs
// the same check after Validate, on every pass whose rendered children
// differ from the last checked, and reports the same message as
// InvalidSpec, for when the webhooks are off.
type ChildRenderer[T Object] interface {
	RenderChildren(obj T) []RenderedChild
}

// RenderedChild is a child as the controller would apply it, and where its
// fields come from.
type RenderedChild struct {
	// Object is the child, with its namespace and name set.
	Object client.Object
	// Sources maps a field path of the child, as the API server names it in
	// a validation error ("spec.template.spec.nodeSelector"), to the spec
	// field it comes from ("spec.nodeSelector"). An error on a field under
	// a source names the spec field, followed by what follows the source in
	// the child's path ("spec.template.spec.tolerations[0].operator" under
	// "spec.template.spec.tolerations" becomes "spec.tolerations[0].operator").
	// The longest source wins. An error on a field no source covers is
	// reported on "spec", naming the child and its field.
	Sources map[string]string
}

// ChildrenDryRunTimeout bounds the dry runs of one object's children. The
// webhook's own timeout (10 s in the chart) must leave room for it. When it
// runs out, the webhook admits the object with a warning and the
// controller applies the children as usual: a check that could not be made
// never rejects.
const ChildrenDryRunTimeout = 4 * time.Second

// ChildrenCheckedAnnotation is set by the mutating webhook on an object
// whose children the API server accepted in a dry run: its value is their
// hash (childrenHash). The validating webhook and the controller do not
// dry-run children whose hash they find there again, so that a cluster's
// children are dry-run once when it is created, not once by the webhook
// and once by the controller (which may run in another replica). It only
// spares a check: children that differ from it are checked, and children
// applied after a forged value are validated by the API server all the
// same, failing the pass instead of the admission.
const ChildrenCheckedAnnotation = "steward.dev/children-checked"

// childrenChecker has the API server validate rendered children.
type childrenChecker struct {
	client client.Client
	scheme *runtime.Scheme
}

// errChildrenUnchecked wraps an error that kept the children from being
// checked (a timeout, a refused connection, a forbidden dry run): the
// object is neither admitted nor rejected by it.
var errChildrenUnchecked = errors.New("the children could not be checked")

// check dry-runs every child at once, bounded by ChildrenDryRunTimeout,
// and returns nil when the API server would accept them all, a 422 Invalid
// status naming the owner's spec fields when it would reject any, or an
// error wrapping errChildrenUnchecked.
func (k childrenChecker) check(ctx context.Context, gk schema.GroupKind, name string, children []RenderedChild) error {
	ctx, cancel := context.WithTimeout(ctx, ChildrenDryRunTimeout)
	defer cancel()
	kinds := make([]string, len(children))
	results := make([]error, len(children))
	var wg sync.WaitGroup
	for i, child := range children {
		wg.Go(func() { kinds[i], results[i] = k.dryRun(ctx, child.Object) })
	}
	wg.Wait()

	var causes []metav1.StatusCause
	for i, err := range results {
		if err == nil {
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonInvalid {
			return fmt.Errorf("%w: %w", errChildrenUnchecked, err)
		}
		for _, c := range sourceCauses(children[i], kinds[i], status.Status()) {
			// Children made from one spec field (each zone's StatefulSet
			// from the cluster's placement) fail alike: say it once.
			if !slices.Contains(causes, c) {
				causes = append(causes, c)
			}
		}
	}
	if len(causes) == 0 {
		return nil
	}
	messages := make([]string, len(causes))
	for i, c := range causes {
		messages[i] = c.Field + ": " + c.Message
	}
	message := messages[0]
	if len(messages) > 1 {
		message = "[" + strings.Join(messages, ", ") + "]"
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes},
		Message: fmt.Sprintf("%s %q is invalid: %s", gk.String(), name, message),
	}}
}

// dryRun server-side applies obj as Context.Apply does, without persisting
// it, and returns its kind and the API server's answer.
func (k childrenChecker) dryRun(ctx context.Context, obj client.Object) (string, error) {
	gvk, err := apiutil.GVKForObject(obj, k.scheme)
	if err != nil {
		return "", err
	}
	if sts, ok := obj.(*appsv1.StatefulSet); ok {
		// Larger claim templates are applied by re-creating the StatefulSet
		// (growVolumes), not over it, and smaller ones never (growVolumes
		// says why): dry-run the rest over the live one.
		live := &appsv1.StatefulSet{}
		if err := k.client.Get(ctx, client.ObjectKeyFromObject(sts), live); err == nil &&
			(len(GrownClaimTemplates(live, sts)) > 0 || shrunkClaimTemplates(live, sts) != nil) {
			sts = sts.DeepCopy()
			sts.Spec.VolumeClaimTemplates = live.Spec.VolumeClaimTemplates
			obj = sts
		}
	}
	u, err := applyConfiguration(obj, gvk)
	if err != nil {
		return gvk.Kind, err
	}
	return gvk.Kind, k.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership, client.DryRunAll)
}

// sourceCauses turns the causes of a child's Invalid status into causes on
// the owner's spec fields.
func sourceCauses(child RenderedChild, kind string, status metav1.Status) []metav1.StatusCause {
	if status.Details == nil || len(status.Details.Causes) == 0 {
		return []metav1.StatusCause{{
			Type:    metav1.CauseTypeFieldValueInvalid,
			Field:   "spec",
			Message: fmt.Sprintf("the %s %s made from it would be invalid: %s", kind, child.Object.GetName(), status.Message),
		}}
	}
	causes := make([]metav1.StatusCause, 0, len(status.Details.Causes))
	for _, c := range status.Details.Causes {
		if field, ok := sourceField(child.Sources, c.Field); ok {
			causes = append(causes, metav1.StatusCause{Type: c.Type, Field: field, Message: c.Message})
			continue
		}
		causes = append(causes, metav1.StatusCause{
			Type:    c.Type,
			Field:   "spec",
			Message: fmt.Sprintf("the %s %s made from it would be invalid: %s: %s", kind, child.Object.GetName(), c.Field, c.Message),
		})
	}
	return causes
}

// sourceField maps a child's field path to the spec field it comes from,
// by the longest source that is the path or a prefix of it ending at a
// field or index boundary.
func sourceField(sources map[string]string, path string) (string, bool) {
	best := ""
	for prefix := range sources {
		if len(prefix) <= len(best) || !strings.HasPrefix(path, prefix) {
			continue
		}
		if rest := path[len(prefix):]; rest == "" || rest[0] == '.' || rest[0] == '[' {
			best = prefix
		}
	}
	if best == "" {
		return "", false
	}
	return sources[best] + path[len(best):], true
}

// childrenChecks remembers, per object, the last rendered children the
// controller checked and the outcome, so that a pass dry-runs only when
// they changed.
type childrenChecks struct {
	mu   sync.Mutex
	last map[string]childrenCheck // by object UID
}

type childrenCheck struct {
	hash string
	err  error
}

// get returns the outcome of the last check of uid's children, if they
// hashed to hash.
func (c *childrenChecks) get(uid, hash string) (checked bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[uid]
	if !ok || last.hash != hash {
		return false, nil
	}
	return true, last.err
}

func (c *childrenChecks) put(uid, hash string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]childrenCheck{}
	}
	c.last[uid] = childrenCheck{hash: hash, err: err}
}

func (c *childrenChecks) forget(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, uid)
}

// childrenHash hashes the rendered children: equal hashes, same children.
func childrenHash(scheme *runtime.Scheme, children []RenderedChild) (string, error) {
	objs := make([]any, 0, len(children))
	for _, c := range children {
		gvk, err := apiutil.GVKForObject(c.Object, scheme)
		if err != nil {
			return "", err
		}
		u, err := applyConfiguration(c.Object, gvk)
		if err != nil {
			return "", err
		}
		objs = append(objs, u.Object)
	}
	return hashObject(map[string]any{"children": objs})
}
