package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework/workload"
)

// Events of volume growth.
const (
	// ReasonVolumesGrowing: a StatefulSet's claims were asked for more
	// storage and the StatefulSet is re-created with the larger claim
	// templates, its pods left running.
	ReasonVolumesGrowing = "VolumesGrowing"
)

// errReplacingStatefulSet reports that a StatefulSet was deleted, its pods
// orphaned, to be created again with larger volume claim templates once the
// garbage collector has let it go; the pass is requeued quietly.
var errReplacingStatefulSet = errors.New("the StatefulSet is being re-created with larger volume claims")

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;patch

// growVolumes prepares the apply of a StatefulSet whose volume claim
// templates ask for more storage than the live StatefulSet's: a
// StatefulSet's claim templates cannot change, so each existing claim of
// the grown templates is patched to the new request (the volume's
// provisioner expands it, where its StorageClass allows expansion; the API
// server refuses the patch otherwise, and nothing else is done), and the
// StatefulSet is deleted with its pods orphaned, to be created again by
// the next pass, which adopts the running pods. Pods are not restarted:
// the pod template, and so the revision, is unchanged. A smaller request
// is never applied (an invalid spec). While a flow of the owner is active,
// desired gets the live claim templates instead, and the growth waits for
// the flow to end: a re-created StatefulSet would lose the replicas a flow
// holds it at.
func (c *Context[T]) growVolumes(desired *appsv1.StatefulSet) error {
	live := &appsv1.StatefulSet{}
	if err := c.Client.Get(c, client.ObjectKeyFromObject(desired), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get StatefulSet %s: %w", desired.Name, err)
	}
	if live.DeletionTimestamp != nil && slices.Contains(live.Finalizers, metav1.FinalizerOrphanDependents) {
		return errReplacingStatefulSet
	}
	if err := shrunkClaimTemplates(live, desired); err != nil {
		return InvalidSpec(err)
	}
	grown := GrownClaimTemplates(live, desired)
	if len(grown) == 0 {
		return nil
	}
	if op := c.Obj.StatusCore().Operation; op != nil && op.Phase.Active() {
		// A flow shapes the set meanwhile (a scale-in holds its replicas
		// above the spec's; a re-created set would not know): apply the
		// rest now, the larger claims once the flow has ended.
		desired.Spec.VolumeClaimTemplates = live.DeepCopy().Spec.VolumeClaimTemplates
		c.Log.V(1).Info("Volume growth waits for the flow to end", "statefulSet", desired.Name, "operation", op.Name)
		return nil
	}
	// From the API server: the cache keeps claims without their sizes.
	var claims corev1.PersistentVolumeClaimList
	if err := c.Reader.List(c, &claims, client.InNamespace(desired.Namespace)); err != nil {
		return fmt.Errorf("list the volume claims of StatefulSet %s: %w", desired.Name, err)
	}
	var patched []string
	for i := range claims.Items {
		pvc := &claims.Items[i]
		size, ok := grown[claimTemplateOf(pvc.Name, desired.Name, grown)]
		if !ok || pvc.DeletionTimestamp != nil {
			continue
		}
		if current := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; current.Cmp(size) >= 0 {
			continue
		}
		patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size.String())
		if err := c.Client.Patch(c, pvc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return fmt.Errorf("grow volume claim %s to %s: %w", pvc.Name, size.String(), err)
		}
		patched = append(patched, pvc.Name)
	}
	uid := live.UID
	if err := c.Client.Delete(c, live, client.PropagationPolicy(metav1.DeletePropagationOrphan),
		client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete StatefulSet %s to re-create it with larger volume claims: %w", live.Name, err)
	}
	c.Log.Info("Growing volumes: re-creating the StatefulSet, its pods left running", "statefulSet", live.Name, "claims", patched)
	c.EventAbout(live, corev1.EventTypeNormal, ReasonVolumesGrowing, "Asked for %s for the claims %s; re-creating StatefulSet %s with the larger claim templates, its pods left running",
		sizes(grown), strings.Join(patched, ", "), live.Name)
	return errReplacingStatefulSet
}

// GrownClaimTemplates returns, by template name, the storage requests of
// desired's volume claim templates that are larger than live's template
// of the same name.
func GrownClaimTemplates(live, desired *appsv1.StatefulSet) map[string]resource.Quantity {
	grown := map[string]resource.Quantity{}
	for _, want := range desired.Spec.VolumeClaimTemplates {
		for _, have := range live.Spec.VolumeClaimTemplates {
			if have.Name != want.Name {
				continue
			}
			w, h := want.Spec.Resources.Requests[corev1.ResourceStorage], have.Spec.Resources.Requests[corev1.ResourceStorage]
			if w.Cmp(h) > 0 {
				grown[want.Name] = w
			}
		}
	}
	return grown
}

// claimTemplateOf is the template of grown that made the claim name of
// StatefulSet sts ("<template>-<sts>-<ordinal>"), or "".
func claimTemplateOf(name, sts string, grown map[string]resource.Quantity) string {
	for tmpl := range grown {
		if _, ok := workload.Ordinal(name, tmpl+"-"+sts+"-"); ok {
			return tmpl
		}
	}
	return ""
}

// sizes shows grown's requests, sorted by template.
func sizes(grown map[string]resource.Quantity) string {
	var out []string
	for tmpl, size := range grown {
		out = append(out, tmpl+" "+size.String())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list

// checkVolumeGrowth refuses a change of the rendered StatefulSets' volume
// claim templates that their volumes cannot follow: a smaller request (a
// volume never shrinks), or a larger one whose StorageClass does not allow
// volume expansion. before and after are the children rendered from the
// stored spec and from the new one; the errors name the owner's spec
// fields, through the children's Sources.
func checkVolumeGrowth(ctx context.Context, r client.Reader, before, after []RenderedChild) field.ErrorList {
	old := map[string]*appsv1.StatefulSet{}
	for _, child := range before {
		if sts, ok := child.Object.(*appsv1.StatefulSet); ok {
			old[sts.Name] = sts
		}
	}
	var errs field.ErrorList
	for _, child := range after {
		sts, ok := child.Object.(*appsv1.StatefulSet)
		if !ok || old[sts.Name] == nil {
			continue
		}
		for i, want := range sts.Spec.VolumeClaimTemplates {
			have := claimTemplate(old[sts.Name], want.Name)
			if have == nil {
				continue
			}
			w, h := want.Spec.Resources.Requests[corev1.ResourceStorage], have.Spec.Resources.Requests[corev1.ResourceStorage]
			path := ownerField(child.Sources, fmt.Sprintf("spec.volumeClaimTemplates[%d].spec.resources[storage]", i))
			switch w.Cmp(h) {
			case -1:
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s is less than %s: a volume can grow, never shrink", w.String(), h.String())))
			case 1:
				if err := expandable(ctx, r, want.Spec.StorageClassName); err != nil {
					errs = append(errs, field.Forbidden(path, fmt.Sprintf("cannot grow from %s to %s: %v", h.String(), w.String(), err)))
				}
			}
		}
	}
	return errs
}

// shrunkClaimTemplates says which of desired's claim templates ask for
// less than live's; the API refuses such a change at admission, and the
// controller (webhooks off) reports it as an invalid spec.
func shrunkClaimTemplates(live, desired *appsv1.StatefulSet) error {
	for _, want := range desired.Spec.VolumeClaimTemplates {
		if have := claimTemplate(live, want.Name); have != nil {
			w, h := want.Spec.Resources.Requests[corev1.ResourceStorage], have.Spec.Resources.Requests[corev1.ResourceStorage]
			if w.Cmp(h) < 0 {
				return fmt.Errorf("StatefulSet %s's volume claim template %s asks for %s, less than its volumes' %s: a volume can grow, never shrink",
					desired.Name, want.Name, w.String(), h.String())
			}
		}
	}
	return nil
}

func claimTemplate(sts *appsv1.StatefulSet, name string) *corev1.PersistentVolumeClaim {
	for i := range sts.Spec.VolumeClaimTemplates {
		if sts.Spec.VolumeClaimTemplates[i].Name == name {
			return &sts.Spec.VolumeClaimTemplates[i]
		}
	}
	return nil
}

// ownerField is the owner's spec field a child's field comes from, or the
// child's own path when its Sources do not say.
func ownerField(sources map[string]string, childPath string) *field.Path {
	if src, ok := sources[childPath]; ok {
		return field.NewPath(src)
	}
	return field.NewPath(childPath)
}

// expandable says why volumes of the StorageClass name (nil: the cluster's
// default class) cannot be expanded, or nil when they can.
func expandable(ctx context.Context, r client.Reader, name *string) error {
	if name == nil || *name == "" {
		var classes storagev1.StorageClassList
		if err := r.List(ctx, &classes); err != nil {
			return fmt.Errorf("list StorageClasses: %w", err)
		}
		for i := range classes.Items {
			if classes.Items[i].Annotations[defaultClassAnnotation] == "true" {
				return classExpands(&classes.Items[i])
			}
		}
		return errors.New("the cluster has no default StorageClass to expand its volumes")
	}
	class := &storagev1.StorageClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: *name}, class); err != nil {
		return fmt.Errorf("StorageClass %s: %w", *name, err)
	}
	return classExpands(class)
}

// defaultClassAnnotation marks the cluster's default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func classExpands(class *storagev1.StorageClass) error {
	if class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion {
		return fmt.Errorf("StorageClass %s does not allow volume expansion (allowVolumeExpansion)", class.Name)
	}
	return nil
}
