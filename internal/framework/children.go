package framework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// applyKey identifies a child across passes.
type applyKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// applyRecord is what the last apply of a child sent and got back.
type applyRecord struct {
	hash    string
	uid     types.UID
	version string
	owner   types.UID
}

// Apply server-side applies obj as a child of the object playing component,
// with field owner "steward" and forced ownership. It sets obj's namespace
// (to the owner's when empty), the standard labels and a controller owner
// reference, and records obj as applied in this pass for DeleteOrphans.
//
// Apply writes only when needed: it remembers what it last sent for each
// child and the child's generation (or resourceVersion, for kinds without
// one) that came back, and skips the call while both are unchanged. A child
// changed by someone else, or a restart of the manager, causes one apply.
// On return obj holds the child as the API server (or the cache) has it.
//
// A StatefulSet whose volume claim templates ask for more storage than the
// live one's is not applied over it (the API forbids that change): its
// claims are grown and it is re-created, its pods left running
// (growVolumes); Apply returns a quiet requeue meanwhile. While a flow
// runs, it is applied with the live claim templates instead, and grows
// after the flow.
func (c *Context[T]) Apply(obj client.Object, component string) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme)
	if err != nil {
		return fmt.Errorf("apply %T: %w", obj, err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(c.Obj.GetNamespace())
	}
	obj.SetLabels(standard.Merge(obj.GetLabels(), c.Labels(component)))
	if err := controllerutil.SetControllerReference(c.Obj, obj, c.Scheme); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, key(obj), err)
	}
	if sts, ok := obj.(*appsv1.StatefulSet); ok {
		// Before hashing: while a flow runs, growVolumes applies the live
		// claim templates, and the grown ones once it has ended.
		if err := c.growVolumes(sts); err != nil {
			return err
		}
	}
	u, err := applyConfiguration(obj, gvk)
	if err != nil {
		return err
	}
	hash, err := hashObject(u.Object)
	if err != nil {
		return err
	}
	k := applyKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
	c.applied[childKey{gk: gvk.GroupKind(), name: obj.GetName()}] = true

	if c.r.unchanged(c, c.Client, k, hash, c.Obj.GetUID(), obj) {
		return nil
	}
	if err := c.Client.Apply(c, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, key(obj), err)
	}
	c.Log.V(1).Info("Applied child", "kind", gvk.Kind, "name", obj.GetName())
	c.r.remember(k, applyRecord{hash: hash, uid: u.GetUID(), version: versionOf(u), owner: c.Obj.GetUID()})
	if err := fromUnstructured(u, obj); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, key(obj), err)
	}
	return nil
}

// unchanged reports whether the child at k is as the last apply of the same
// content left it; if so it copies the cached child into obj.
func (r *core) unchanged(ctx context.Context, cl client.Reader, k applyKey, hash string, owner types.UID, obj client.Object) bool {
	r.mu.Lock()
	rec, ok := r.applies[k]
	r.mu.Unlock()
	if !ok || rec.hash != hash || rec.owner != owner {
		return false
	}
	current := obj.DeepCopyObject().(client.Object)
	if err := cl.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, current); err != nil {
		return false
	}
	if current.GetUID() != rec.uid || versionOf(current) != rec.version {
		return false
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(current).Elem())
	return true
}

func (r *core) remember(k applyKey, rec applyRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applies[k] = rec
}

// forgetOwner drops the apply records of an owner's children.
func (r *core) forgetOwner(owner types.UID) {
	r.checks.forget(string(owner))
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, rec := range r.applies {
		if rec.owner == owner {
			delete(r.applies, k)
		}
	}
}

func (r *core) forget(k applyKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.applies, k)
}

// versionOf is what tells whether someone changed obj: its generation, or its
// resourceVersion for kinds without one.
func versionOf(obj client.Object) string {
	if g := obj.GetGeneration(); g > 0 {
		return "g" + strconv.FormatInt(g, 10)
	}
	return "rv" + obj.GetResourceVersion()
}

// applyConfiguration turns obj into an unstructured apply configuration,
// without the fields the server owns.
func applyConfiguration(obj client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", gvk.Kind, key(obj), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	delete(u.Object, "status")
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured, obj client.Object) error {
	if uo, ok := obj.(*unstructured.Unstructured); ok {
		uo.Object = u.Object
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// hashObject hashes the JSON form of m (encoding/json sorts map keys).
func hashObject(m map[string]any) (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("hash object: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// DeleteOrphans deletes the children of the listed type that the object
// controls and labels as its own but that this pass did not Apply, and
// returns their names. Call it only after applying every child of that type
// the object should have. Config ConfigMaps are left to CollectConfigMaps.
func (c *Context[T]) DeleteOrphans(list client.ObjectList) ([]string, error) {
	if err := c.Client.List(c, list, client.InNamespace(c.Obj.GetNamespace()),
		client.MatchingLabels(standard.Owned(c.Obj.GetName()))); err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	var deleted []string
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !metav1.IsControlledBy(obj, c.Obj) || !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		if _, isConfig := obj.GetLabels()[ConfigLabel]; isConfig {
			continue
		}
		gvk, err := apiutil.GVKForObject(obj, c.Scheme)
		if err != nil {
			return deleted, fmt.Errorf("delete orphans: %w", err)
		}
		if c.applied[childKey{gk: gvk.GroupKind(), name: obj.GetName()}] {
			continue
		}
		if err := c.deleteChild(obj, gvk); err != nil {
			return deleted, err
		}
		deleted = append(deleted, obj.GetName())
	}
	return deleted, nil
}

// deleteChild deletes obj, precondition on its UID, in the background.
func (c *Context[T]) deleteChild(obj client.Object, gvk schema.GroupVersionKind) error {
	uid := obj.GetUID()
	err := c.Client.Delete(c, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", gvk.Kind, key(obj), err)
	}
	c.Log.Info("Deleted child", "kind", gvk.Kind, "name", obj.GetName())
	c.r.forget(applyKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()})
	return nil
}
