package kubectlsteward

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
)

// tableAccept asks the API server for a list as it prints it: the kind's
// printer columns (its CRD's additionalPrinterColumns), as kubectl get
// asks for it.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// shownElsewhere are the printer columns the status table has columns of
// its own for (NAME, READY, REASON, OPERATION, AGE), which the RUNS column
// leaves out.
var shownElsewhere = []string{"Name", "Ready", "Reason", "Operation", "Op-Phase", "Phase", "Step", "Age"}

// row is one object of a list, with what its kind's printer columns say
// runs: "Leader=zk-1 Members=[1,2,3]".
type row struct {
	obj  framework.Object
	runs string
}

// listRows lists gvk's objects through the API server's table printing,
// with the objects themselves (includeObject=Object): one request gives
// each object and its kind's own columns, so a new kind's columns show
// without a change here. wide keeps the columns a kind shows only with
// kubectl get -o wide (priority above 0). A kind whose CRD is not
// installed lists nothing: Steward runs without that system.
func (c *CLI) listRows(ctx context.Context, gvk schema.GroupVersionKind, namespace string, allNamespaces, wide bool) ([]row, error) {
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	rc, err := c.restClient(gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	req := rc.Get().Resource(mapping.Resource.Resource).Param("includeObject", string(metav1.IncludeObject)).SetHeader("Accept", tableAccept)
	if !allNamespaces {
		req = req.Namespace(namespace)
	}
	raw, err := req.DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil // the CRD went away after discovery was cached
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return nil, fmt.Errorf("list %s: the API server's table: %w", gvk.Kind, err)
	}
	out := make([]row, 0, len(table.Rows))
	for _, r := range table.Rows {
		obj, _ := newObject(c.scheme, gvk)
		if err := json.Unmarshal(r.Object.Raw, obj); err != nil {
			return nil, fmt.Errorf("list %s: an object of the table: %w", gvk.Kind, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, row{obj: obj, runs: runs(table.ColumnDefinitions, r.Cells, wide)})
	}
	slices.SortFunc(out, func(a, b row) int {
		return strings.Compare(a.obj.GetNamespace()+"/"+a.obj.GetName(), b.obj.GetNamespace()+"/"+b.obj.GetName())
	})
	return out, nil
}

// runs is the RUNS column: the printer columns of a row that the status
// table does not show otherwise, as Name=value, empty ones left out.
func runs(columns []metav1.TableColumnDefinition, cells []any, wide bool) string {
	var parts []string
	for i, col := range columns {
		if i >= len(cells) || slices.Contains(shownElsewhere, col.Name) || col.Priority > 0 && !wide {
			continue
		}
		value := cells[i]
		if value == nil || value == "" {
			continue
		}
		if f, ok := value.(float64); ok && f == float64(int64(f)) {
			value = int64(f) // JSON numbers: 3, not 3e+00
		}
		parts = append(parts, fmt.Sprintf("%s=%v", col.Name, value))
	}
	return strings.Join(parts, " ")
}

// restClient is a REST client for one Steward API group version.
func (c *CLI) restClient(gv schema.GroupVersion) (rest.Interface, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", gv, err)
	}
	return rc, nil
}

// lastEvents are the newest Event of every object of namespace (every
// namespace with allNamespaces), by the object's UID.
func (c *CLI) lastEvents(ctx context.Context, namespace string, allNamespaces bool) (map[types.UID]eventsv1.Event, error) {
	var list eventsv1.EventList
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list Events: %w", err)
	}
	last := map[types.UID]eventsv1.Event{}
	for _, e := range list.Items {
		if prev, ok := last[e.Regarding.UID]; !ok || eventTime(e).After(eventTime(prev)) {
			last[e.Regarding.UID] = e
		}
	}
	return last, nil
}
