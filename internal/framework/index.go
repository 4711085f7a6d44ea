package framework

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// InstanceIndex is the cache's index of children by their instance label
// (standard.LabelInstance). The cache answers a List of a namespace by
// reading every object of the namespace and matching its labels, so a pass
// that lists one cluster's pods would cost as much as the namespace holds
// clusters; through this index it reads that cluster's children only.
const InstanceIndex = "steward.dev/instance"

// IndexedKinds are the kinds whose cached objects are indexed by instance:
// those every system lists by their owner's labels, each watched anyway.
func IndexedKinds() []client.Object {
	return []client.Object{
		&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.ConfigMap{},
		&corev1.Service{}, &corev1.Secret{}, &appsv1.StatefulSet{},
	}
}

// IndexInstances adds InstanceIndex to the cache's informers of
// IndexedKinds. Call it before the cache starts.
func IndexInstances(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range IndexedKinds() {
		if err := indexer.IndexField(ctx, obj, InstanceIndex, instanceOf); err != nil {
			return fmt.Errorf("index %T by instance: %w", obj, err)
		}
	}
	return nil
}

func instanceOf(obj client.Object) []string {
	if v, ok := obj.GetLabels()[standard.LabelInstance]; ok {
		return []string{v}
	}
	return nil
}

// IndexedReader wraps the cache's reader so that a List of an indexed kind
// whose label selector names one instance reads that instance's objects
// through InstanceIndex (IndexInstances must have added it), and matches
// the selector's labels among them as before. Every other read passes
// through unchanged, so the controllers' List calls need not know about
// the index.
func IndexedReader(cache client.Reader, scheme *runtime.Scheme) (client.Reader, error) {
	kinds := map[schema.GroupVersionKind]bool{}
	for _, obj := range IndexedKinds() {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		gvk.Kind += "List"
		kinds[gvk] = true
	}
	return &indexedReader{Reader: cache, scheme: scheme, kinds: kinds}, nil
}

type indexedReader struct {
	client.Reader
	scheme *runtime.Scheme
	kinds  map[schema.GroupVersionKind]bool
}

func (r *indexedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.FieldSelector == nil && o.LabelSelector != nil {
		if instance, ok := selectedInstance(o.LabelSelector); ok && r.indexed(list) {
			o.FieldSelector = fields.OneTermEqualSelector(InstanceIndex, instance)
			return r.Reader.List(ctx, list, o)
		}
	}
	return r.Reader.List(ctx, list, opts...)
}

func (r *indexedReader) indexed(list client.ObjectList) bool {
	if _, ok := list.(runtime.Unstructured); ok {
		return false // read through the unstructured cache, not indexed
	}
	gvk, err := apiutil.GVKForObject(list, r.scheme)
	return err == nil && r.kinds[gvk]
}

// selectedInstance returns the one instance a label selector requires, if
// it requires one.
func selectedInstance(sel labels.Selector) (string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", false
	}
	for _, req := range reqs {
		if req.Key() != standard.LabelInstance {
			continue
		}
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if values := req.Values(); values.Len() == 1 {
				return values.UnsortedList()[0], true
			}
		}
	}
	return "", false
}
