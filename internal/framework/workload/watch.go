package workload

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// EnqueueOwnerByLabels maps a pod (or any child) carrying the standard
// labels of app, managed by Steward and playing one of components, to a
// request for the object of its app.kubernetes.io/instance label in the
// same namespace. Pods belong to a StatefulSet, not to the object, so an
// owner-reference watch does not see them; this one does, and a pod that
// becomes ready or goes away starts a pass of its object at once.
func EnqueueOwnerByLabels(app string, components ...string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		l := obj.GetLabels()
		if l[standard.LabelName] != app || l[standard.LabelManagedBy] != standard.ManagedBy ||
			l[standard.LabelInstance] == "" || !slices.Contains(components, l[standard.LabelComponent]) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{
			Namespace: obj.GetNamespace(), Name: l[standard.LabelInstance],
		}}}
	})
}
