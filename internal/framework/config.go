package framework

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// ConfigLabel is the label of config ConfigMaps; its value is the component.
const ConfigLabel = "steward.dev/config"

// ConfigRevisionAnnotation records on a config ConfigMap the owner's
// generation that last put it to use: set when it is created and raised
// when an older revision is used again (a rollback), so that
// CollectConfigMaps keeps the most recently used revisions. Creation
// timestamps would not do: they have a resolution of one second and never
// move.
const ConfigRevisionAnnotation = "steward.dev/config-revision"

// EnsureConfigMap makes sure the immutable, content-addressed ConfigMap of
// component holding data exists, and returns its name for the pod template
// to reference: a change of data yields a new name and so rolls the
// workload. It writes only when the ConfigMap does not exist yet, or when
// an existing one is used again after a newer revision (its revision
// annotation is raised). The ConfigMap is protected from CollectConfigMaps
// in this pass.
//
// A ConfigMap of that name that is being deleted, or that the object does
// not control (one left by a deleted object of the same name that the
// garbage collector has not removed yet, or someone else's), is not reused:
// EnsureConfigMap returns an error, and the pass backs off until it is gone.
func (c *Context[T]) EnsureConfigMap(component string, data map[string]string) (string, error) {
	name := standard.ConfigMapName(c.Obj.GetName(), component, data)
	c.configs[name] = true
	k := client.ObjectKey{Namespace: c.Obj.GetNamespace(), Name: name}
	cm := &corev1.ConfigMap{}
	err := c.Client.Get(c, k, cm)
	if err == nil {
		c.r.createdRecently(c.createdKey(cm), false)
		return name, c.reuseConfigMap(cm, component)
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get ConfigMap %s: %w", name, err)
	}
	if c.CreatedRecently(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: name}}) {
		// Created by an earlier pass; the cache has not caught up yet. A
		// Create would only be answered 409.
		return name, nil
	}
	switch err := c.Client.Create(c, c.newConfigMap(name, component, data), client.FieldOwner(FieldOwner)); {
	case err == nil:
		c.Log.Info("Created config ConfigMap", "name", name, "component", component)
		c.Created(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: name}})
		return name, nil
	case apierrors.IsAlreadyExists(err):
		// The cache lags behind the API server: look at the live one.
		if err := c.Reader.Get(c, k, cm); err != nil {
			return "", fmt.Errorf("get ConfigMap %s: %w", name, err)
		}
		return name, c.reuseConfigMap(cm, component)
	default:
		return "", fmt.Errorf("create ConfigMap %s: %w", name, err)
	}
}

// newConfigMap returns the config ConfigMap name of component.
func (c *Context[T]) newConfigMap(name, component string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       c.Obj.GetNamespace(),
			Labels:          standard.Merge(c.Labels(component), map[string]string{ConfigLabel: component}),
			Annotations:     map[string]string{ConfigRevisionAnnotation: strconv.FormatInt(c.Obj.GetGeneration(), 10)},
			OwnerReferences: []metav1.OwnerReference{c.Owner()},
		},
		Data:      data,
		Immutable: ptr.To(true),
	}
}

// reuseConfigMap checks that an existing config ConfigMap is the object's
// own and not going away, and makes it the newest revision.
func (c *Context[T]) reuseConfigMap(cm *corev1.ConfigMap, component string) error {
	if !cm.DeletionTimestamp.IsZero() {
		return fmt.Errorf("ConfigMap %s is being deleted; waiting to create it again", cm.Name)
	}
	if !metav1.IsControlledBy(cm, c.Obj) {
		return fmt.Errorf("ConfigMap %s is not controlled by this %s (uid %s) but %s",
			cm.Name, c.r.kind, c.Obj.GetUID(), c.foreignController(cm))
	}
	return c.markNewest(cm, component)
}

// foreignController says who controls obj instead of the object, for error
// messages.
func (c *Context[T]) foreignController(obj metav1.Object) string {
	ref := metav1.GetControllerOf(obj)
	switch {
	case ref == nil:
		return "has no controller; waiting for it to be removed"
	case ref.Kind == c.r.kind && ref.Name == c.Obj.GetName():
		return fmt.Sprintf("by a deleted %s of the same name (uid %s); waiting for the garbage collector to delete it",
			ref.Kind, ref.UID)
	default:
		return fmt.Sprintf("by %s %s (uid %s); waiting for it to be removed", ref.Kind, ref.Name, ref.UID)
	}
}

// markNewest raises cm's revision annotation to the object's generation
// when another config ConfigMap of component has an equal or higher
// revision, so that a rollback to earlier content makes the reused
// ConfigMap the newest for CollectConfigMaps. Its data is immutable, its
// metadata is not. In steady state it finds cm newest and writes nothing.
func (c *Context[T]) markNewest(cm *corev1.ConfigMap, component string) error {
	others, err := c.configMaps(component)
	if err != nil {
		return err
	}
	rev, top := configRevision(cm), int64(-1)
	for i := range others {
		if o := &others[i]; o.Name != cm.Name && o.DeletionTimestamp.IsZero() {
			top = max(top, configRevision(o))
		}
	}
	if top < rev {
		return nil
	}
	base := cm.DeepCopy()
	newRev := max(c.Obj.GetGeneration(), top+1)
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, ConfigRevisionAnnotation, strconv.FormatInt(newRev, 10))
	if err := c.Client.Patch(c, cm, client.MergeFrom(base), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("mark ConfigMap %s as revision %d: %w", cm.Name, newRev, err)
	}
	c.Log.Info("Config ConfigMap used again", "name", cm.Name, "component", component, "revision", newRev)
	return nil
}

// configMaps lists the config ConfigMaps of the object's component.
func (c *Context[T]) configMaps(component string) ([]corev1.ConfigMap, error) {
	var cms corev1.ConfigMapList
	sel := standard.Merge(standard.Owned(c.Obj.GetName()), map[string]string{ConfigLabel: component})
	if err := c.Client.List(c, &cms, client.InNamespace(c.Obj.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("list config ConfigMaps: %w", err)
	}
	return cms.Items, nil
}

// CollectConfigMaps deletes the config ConfigMaps of component that nothing
// needs any more, and returns their names. It never deletes one ensured in
// this pass or referenced in the namespace by a Pod, the pod template of a
// StatefulSet, Deployment, DaemonSet, ReplicaSet, Job or CronJob, or a
// ControllerRevision of a workload the object does not control (the
// history kubectl rollout undo uses), and keeps the
// Options.ConfigRevisions most recently used unreferenced ones for
// rollback.
//
// The revision history of the object's own workloads is not a reference:
// a StatefulSet keeps ten ControllerRevisions by default, each naming the
// ConfigMap its template had, and counting them kept every superseded
// ConfigMap of a cluster for ten changes. Rolling back is the object's
// (its spec renders the old content again, and EnsureConfigMap re-creates
// a collected ConfigMap), never kubectl rollout undo on a workload the
// operator would set back at once; so one rule holds for every system:
// what pods and templates use, plus the Options.ConfigRevisions newest.
func (c *Context[T]) CollectConfigMaps(component string) ([]string, error) {
	ns := c.Obj.GetNamespace()
	cms, err := c.configMaps(component)
	if err != nil {
		return nil, err
	}
	var candidates []*corev1.ConfigMap
	for i := range cms {
		cm := &cms[i]
		if metav1.IsControlledBy(cm, c.Obj) && !c.configs[cm.Name] && cm.DeletionTimestamp.IsZero() {
			candidates = append(candidates, cm)
		}
	}
	if len(candidates) <= c.r.configRevisions {
		return nil, nil
	}
	used, err := c.referencedConfigMaps(ns)
	if err != nil {
		return nil, err
	}
	candidates = slices.DeleteFunc(candidates, func(cm *corev1.ConfigMap) bool { return used[cm.Name] })
	sortNewestFirst(candidates)
	if len(candidates) <= c.r.configRevisions {
		return nil, nil
	}
	var deleted []string
	for _, cm := range candidates[c.r.configRevisions:] {
		if err := c.deleteChild(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
			return deleted, err
		}
		deleted = append(deleted, cm.Name)
	}
	return deleted, nil
}

// configRevision returns cm's revision annotation, 0 when it has none.
func configRevision(cm *corev1.ConfigMap) int64 {
	r, _ := strconv.ParseInt(cm.Annotations[ConfigRevisionAnnotation], 10, 64)
	return r
}

// sortNewestFirst sorts ConfigMaps newest first: by revision, then
// creation time, then name.
func sortNewestFirst(cms []*corev1.ConfigMap) {
	slices.SortFunc(cms, func(a, b *corev1.ConfigMap) int {
		if c := cmp.Compare(configRevision(b), configRevision(a)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
}

// referencedConfigMaps returns the names of the ConfigMaps referenced by
// the pods, workload templates and controller revisions of namespace ns,
// leaving out the revisions of workloads the object controls.
func (c *Context[T]) referencedConfigMaps(ns string) (map[string]bool, error) {
	used := map[string]bool{}
	lists := []client.ObjectList{
		&corev1.PodList{}, &appsv1.StatefulSetList{}, &appsv1.DeploymentList{}, &appsv1.DaemonSetList{},
		&appsv1.ReplicaSetList{}, &batchv1.JobList{}, &batchv1.CronJobList{}, &appsv1.ControllerRevisionList{},
	}
	owned := map[types.UID]bool{} // workloads the object controls
	for _, list := range lists {
		if err := c.Client.List(c, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list %T: %w", list, err)
		}
		if revisions, ok := list.(*appsv1.ControllerRevisionList); ok {
			revisions.Items = slices.DeleteFunc(revisions.Items, func(cr appsv1.ControllerRevision) bool {
				ref := metav1.GetControllerOf(&cr)
				return ref != nil && owned[ref.UID]
			})
		}
		for _, spec := range podSpecs(list) {
			for _, n := range ReferencedConfigMaps(spec) {
				used[n] = true
			}
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok && metav1.IsControlledBy(obj, c.Obj) {
				owned[obj.GetUID()] = true
			}
			return nil
		})
	}
	return used, nil
}

// podSpecs returns the pod specs in list: of Pods, of the templates of
// workloads, and of the templates recorded in StatefulSet and DaemonSet
// ControllerRevisions (revisions in another format are skipped).
func podSpecs(list client.ObjectList) []*corev1.PodSpec {
	var specs []*corev1.PodSpec
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec)
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.Template.Spec)
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.Template.Spec)
		}
	case *appsv1.DaemonSetList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.Template.Spec)
		}
	case *appsv1.ReplicaSetList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.Template.Spec)
		}
	case *batchv1.JobList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.Template.Spec)
		}
	case *batchv1.CronJobList:
		for i := range l.Items {
			specs = append(specs, &l.Items[i].Spec.JobTemplate.Spec.Template.Spec)
		}
	case *appsv1.ControllerRevisionList:
		for i := range l.Items {
			if spec := revisionPodSpec(&l.Items[i]); spec != nil {
				specs = append(specs, spec)
			}
		}
	}
	return specs
}

// revisionPodSpec returns the pod spec a StatefulSet or DaemonSet
// ControllerRevision records (its data is a patch
// {"spec":{"template":{...}}}), or nil when it holds something else.
func revisionPodSpec(cr *appsv1.ControllerRevision) *corev1.PodSpec {
	var rev struct {
		Spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if len(cr.Data.Raw) == 0 || json.Unmarshal(cr.Data.Raw, &rev) != nil || rev.Spec.Template == nil {
		return nil
	}
	return &rev.Spec.Template.Spec
}

// ReferencedConfigMaps returns the names of the ConfigMaps a pod spec
// references through volumes, projected volumes, envFrom and env, sorted and
// without duplicates.
func ReferencedConfigMaps(spec *corev1.PodSpec) []string {
	var names []string
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil {
			names = append(names, v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					names = append(names, s.ConfigMap.Name)
				}
			}
		}
	}
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for i := range containers {
		for _, e := range containers[i].EnvFrom {
			if e.ConfigMapRef != nil {
				names = append(names, e.ConfigMapRef.Name)
			}
		}
		for _, e := range containers[i].Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				names = append(names, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
