package framework

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CheckChildren exposes the admission dry run of children to the
// integration tests, which run against the shared API server.
func CheckChildren(ctx context.Context, c client.Client, scheme *runtime.Scheme, gk schema.GroupKind, name string, children []RenderedChild) error {
	return childrenChecker{client: c, scheme: scheme}.check(ctx, gk, name, children)
}
