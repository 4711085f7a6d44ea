package framework

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigLabel is the label of config ConfigMaps; its value is the component.
const ConfigLabel = "steward.dev/config"

// ConfigRevisionAnnotation records on a config ConfigMap the owner's
// generation that created it; CollectConfigMaps keeps the newest revisions by
// it, since creation timestamps only have a resolution of one second.
const ConfigRevisionAnnotation = "steward.dev/config-revision"

// configHashLen is the length of the content hash in config ConfigMap names.
const configHashLen = 10

// ConfigHash returns the content hash of data used in config ConfigMap
// names: the first 10 hex digits of a SHA-256 over the sorted keys and
// values.
func ConfigHash(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		// Length prefixes keep {"a":"bc"} and {"ab":"c"} apart.
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(k), k, len(data[k]), data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:configHashLen]
}

// ConfigMapName returns the name of the config ConfigMap of owner's
// component holding data: "<owner>-<component>-<hash>".
func ConfigMapName(owner, component string, data map[string]string) string {
	return fmt.Sprintf("%s-%s-%s", owner, component, ConfigHash(data))
}

// EnsureConfigMap makes sure the immutable, content-addressed ConfigMap of
// component holding data exists, and returns its name for the pod template
// to reference: a change of data yields a new name and so rolls the
// workload. It writes only when the ConfigMap does not exist yet. The
// ConfigMap is protected from CollectConfigMaps in this pass.
func (c *Context[T]) EnsureConfigMap(component string, data map[string]string) (string, error) {
	name := ConfigMapName(c.Obj.GetName(), component, data)
	c.configs[name] = true
	cm := &corev1.ConfigMap{}
	err := c.Client.Get(c, client.ObjectKey{Namespace: c.Obj.GetNamespace(), Name: name}, cm)
	if err == nil {
		return name, nil
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get ConfigMap %s: %w", name, err)
	}
	cm = &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       c.Obj.GetNamespace(),
			Labels:          mergeLabels(c.Labels(component), map[string]string{ConfigLabel: component}),
			Annotations:     map[string]string{ConfigRevisionAnnotation: strconv.FormatInt(c.Obj.GetGeneration(), 10)},
			OwnerReferences: []metav1.OwnerReference{c.Owner()},
		},
		Data:      data,
		Immutable: ptr.To(true),
	}
	switch err := c.Client.Create(c, cm, client.FieldOwner(FieldOwner)); {
	case err == nil:
		c.Log.Info("Created config ConfigMap", "name", name, "component", component)
	case !apierrors.IsAlreadyExists(err): // AlreadyExists: the cache lags
		return "", fmt.Errorf("create ConfigMap %s: %w", name, err)
	}
	return name, nil
}

// CollectConfigMaps deletes the config ConfigMaps of component that nothing
// needs any more, and returns their names. It never deletes one ensured in
// this pass or referenced by a Pod, StatefulSet or Deployment in the
// namespace, and keeps the newest Options.ConfigRevisions unreferenced ones
// for rollback.
func (c *Context[T]) CollectConfigMaps(component string) ([]string, error) {
	ns := c.Obj.GetNamespace()
	var cms corev1.ConfigMapList
	sel := mergeLabels(ownedSelector(c.Obj.GetName()), map[string]string{ConfigLabel: component})
	if err := c.Client.List(c, &cms, client.InNamespace(ns), client.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("list config ConfigMaps: %w", err)
	}
	var candidates []*corev1.ConfigMap
	for i := range cms.Items {
		cm := &cms.Items[i]
		if metav1.IsControlledBy(cm, c.Obj) && !c.configs[cm.Name] && cm.DeletionTimestamp.IsZero() {
			candidates = append(candidates, cm)
		}
	}
	if len(candidates) <= c.r.opts.ConfigRevisions {
		return nil, nil
	}
	used, err := c.referencedConfigMaps(ns)
	if err != nil {
		return nil, err
	}
	candidates = slices.DeleteFunc(candidates, func(cm *corev1.ConfigMap) bool { return used[cm.Name] })
	sortNewestFirst(candidates)
	if len(candidates) <= c.r.opts.ConfigRevisions {
		return nil, nil
	}
	var deleted []string
	for _, cm := range candidates[c.r.opts.ConfigRevisions:] {
		if err := c.deleteChild(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
			return deleted, err
		}
		deleted = append(deleted, cm.Name)
	}
	return deleted, nil
}

// sortNewestFirst sorts ConfigMaps newest first: by revision, then
// creation time, then name.
func sortNewestFirst(cms []*corev1.ConfigMap) {
	revision := func(cm *corev1.ConfigMap) int64 {
		r, _ := strconv.ParseInt(cm.Annotations[ConfigRevisionAnnotation], 10, 64)
		return r
	}
	slices.SortFunc(cms, func(a, b *corev1.ConfigMap) int {
		if c := cmp.Compare(revision(b), revision(a)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
}

// referencedConfigMaps returns the names of the ConfigMaps referenced by
// the Pods, StatefulSets and Deployments of namespace ns.
func (c *Context[T]) referencedConfigMaps(ns string) (map[string]bool, error) {
	used := map[string]bool{}
	add := func(spec *corev1.PodSpec) {
		for _, n := range ReferencedConfigMaps(spec) {
			used[n] = true
		}
	}
	var pods corev1.PodList
	if err := c.Client.List(c, &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	for i := range pods.Items {
		add(&pods.Items[i].Spec)
	}
	var sets appsv1.StatefulSetList
	if err := c.Client.List(c, &sets, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list StatefulSets: %w", err)
	}
	for i := range sets.Items {
		add(&sets.Items[i].Spec.Template.Spec)
	}
	var deploys appsv1.DeploymentList
	if err := c.Client.List(c, &deploys, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Deployments: %w", err)
	}
	for i := range deploys.Items {
		add(&deploys.Items[i].Spec.Template.Spec)
	}
	return used, nil
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
