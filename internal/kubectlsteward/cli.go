package kubectlsteward

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
)

// CLI runs the plugin's commands against one API server.
type CLI struct {
	Out, Err io.Writer
	// Wait is how long pause, resume and rescue wait for the controller
	// to act before they report what it has done so far.
	Wait time.Duration

	client client.Client
	config *rest.Config
	mapper meta.RESTMapper
	scheme *runtime.Scheme
	now    func() time.Time
}

// New returns a CLI that speaks to the API server of cfg, resolving
// resource types with mapper (kubectl's, which knows short names).
func New(cfg *rest.Config, mapper meta.RESTMapper, out, errOut io.Writer) (*CLI, error) {
	s := newScheme()
	// The client maps kinds with controller-runtime's own mapper, which
	// discovers a group when first asked for it; kubectl's, which resolves
	// the short names users type, re-reads all of discovery on a miss.
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	return &CLI{Out: out, Err: errOut, Wait: 10 * time.Second, client: c, config: cfg, mapper: mapper, scheme: s, now: time.Now}, nil
}

// parseRef reads the object arguments kubectl takes: TYPE/NAME, or TYPE
// NAME.
func parseRef(args []string) (typ, name string, err error) {
	switch len(args) {
	case 1:
		typ, name, _ = strings.Cut(args[0], "/")
	case 2:
		typ, name = args[0], args[1]
	}
	if typ == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("name one object: TYPE/NAME or TYPE NAME (for example zk/zk1), got %q", strings.Join(args, " "))
	}
	return typ, name, nil
}

// get reads one Steward object.
func (c *CLI) get(ctx context.Context, namespace, typ, name string) (schema.GroupVersionKind, framework.Object, error) {
	gvk, err := resolve(c.mapper, c.scheme, typ)
	if err != nil {
		return gvk, nil, err
	}
	obj, _ := newObject(c.scheme, gvk)
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return gvk, nil, fmt.Errorf("get %s in namespace %s: %w", kindName(gvk, name), namespace, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return gvk, obj, nil
}
