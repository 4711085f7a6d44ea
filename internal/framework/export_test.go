package framework

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// CheckChildren exposes the admission dry run of children to the
// integration tests, which run against the shared API server.
func CheckChildren(ctx context.Context, c client.Client, scheme *runtime.Scheme, gk schema.GroupKind, name string, children []RenderedChild) error {
	return childrenChecker{client: c, scheme: scheme}.check(ctx, gk, name, children)
}

// AdmissionHooks returns the mutating and validating webhooks of actor, a
// Defaulter and ChildRenderer, as SetupWebhooks wires them, dry-running
// children through c.
func AdmissionHooks[T Object, S any](c client.Client, scheme *runtime.Scheme, gk schema.GroupKind, actor Actor[T, S]) (mutating, validating *admission.Webhook) {
	m, v := newWebhookHooks(scheme, gk, actor)
	v.checker = childrenChecker{client: c, scheme: scheme}
	m.children = v
	return &admission.Webhook{Handler: m}, validatingWebhook[T](scheme, gk, v)
}

// ChildrenHash exposes the hash ChildrenCheckedAnnotation records.
func ChildrenHash(scheme *runtime.Scheme, children []RenderedChild) (string, error) {
	return childrenHash(scheme, children)
}
