package kubectlsteward

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// groupSuffix ends the API group of every Steward kind.
const groupSuffix = ".steward.dev"

// newScheme knows the Steward kinds and Kubernetes' own (Events).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	for _, add := range []func(*runtime.Scheme) error{zkv1.AddToScheme, mov1.AddToScheme, obv1.AddToScheme, gpssv1.AddToScheme} {
		utilruntime.Must(add(s))
	}
	return s
}

// systemOf is the system a Steward group belongs to: its first label.
func systemOf(gk schema.GroupKind) string {
	system, _, _ := strings.Cut(gk.Group, ".")
	return system
}

// stewardKinds are the Steward kinds the scheme knows that the framework
// reconciles (status.conditions and status.operation), sorted by group
// and kind.
func stewardKinds(s *runtime.Scheme) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range s.AllKnownTypes() {
		if !strings.HasSuffix(gvk.Group, groupSuffix) || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if _, ok := newObject(s, gvk); ok {
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.Group+"/"+a.Kind, b.Group+"/"+b.Kind)
	})
	return out
}

// newObject is a new empty object of gvk, if the framework reconciles it.
func newObject(s *runtime.Scheme, gvk schema.GroupVersionKind) (framework.Object, bool) {
	o, err := s.New(gvk)
	if err != nil {
		return nil, false
	}
	obj, ok := o.(framework.Object)
	if ok {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return obj, ok
}

// resolve turns a TYPE (a kind, its plural or a short name, as kubectl
// takes them: zk, zookeepercluster, obtenants.oceanbase.steward.dev) into
// a Steward kind.
func resolve(mapper meta.RESTMapper, s *runtime.Scheme, typ string) (schema.GroupVersionKind, error) {
	gvr, err := mapper.ResourceFor(schema.ParseGroupResource(typ).WithVersion(""))
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("resource type %q: %w", typ, err)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("resource type %q: %w", typ, err)
	}
	if !strings.HasSuffix(gvk.Group, groupSuffix) {
		return gvk, fmt.Errorf("%s is not a Steward kind (its group is %q)", gvk.Kind, gvk.Group)
	}
	if _, ok := newObject(s, gvk); !ok {
		return gvk, fmt.Errorf("%s is not a kind this plugin knows: is it newer than the plugin?", gvk.GroupKind())
	}
	return gvk, nil
}

// kindName is how objects are named on the command line and in tables:
// the kind in lower case, as kubectl prints TYPE/NAME.
func kindName(gvk schema.GroupVersionKind, name string) string {
	return strings.ToLower(gvk.Kind) + "/" + name
}
