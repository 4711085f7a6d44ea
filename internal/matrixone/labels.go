package matrixone

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// A CNSet's spec.labels are HAKeeper's CN labels, which the proxies route
// sessions by. MatrixOne 1.2 reads no label from a CN's configuration:
// HAKeeper holds them, and they are set through it (mo-agent's
// wire.CNLabelsPath, through any log pod's probe), on each CN once
// HAKeeper hears from it, and again whenever the view shows others. They
// outlive a CN's restart (HAKeeper keeps a store's record by its UUID).

// unlabeled returns the CNs the set keeps, ready and up to HAKeeper,
// whose labels in the view are not spec.labels, in ordinal order.
func (st *storeState) unlabeled() []*corev1.Pod {
	if st.set.Role != build.RoleCN || !st.viewOK {
		return nil
	}
	var out []*corev1.Pod
	for i := range int(st.set.Replicas) {
		p, ok := st.pods[i]
		if !ok || !workload.IsReady(p) {
			continue
		}
		s := st.store(p.Name)
		if s.State == mov1.StoreUp && !sameLabels(s.Labels, st.set.CNLabels) {
			out = append(out, p)
		}
	}
	return out
}

// sameLabels reports whether two label lists have the same keys, each
// with the same values in any order.
func sameLabels(a, b []mov1.CNLabel) bool {
	return maps.EqualFunc(labelMap(a), labelMap(b), func(x, y []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y)))
	})
}

// labelMap is labels as HAKeeper takes them: each key's values.
func labelMap(labels []mov1.CNLabel) map[string][]string {
	out := make(map[string][]string, len(labels))
	for _, l := range labels {
		out[l.Key] = l.Values
	}
	return out
}

// labelList is HAKeeper's labels as status shows them, in key order; nil
// for none.
func labelList(labels map[string][]string) []mov1.CNLabel {
	var out []mov1.CNLabel
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, mov1.CNLabel{Key: k, Values: labels[k]})
	}
	return out
}

// labelCNs sets spec.labels on each CN of pods in HAKeeper. A CN that
// could not be labeled is named in the error; the others are labeled all
// the same.
func (c *StoreSetController[T]) labelCNs(ctx *framework.Context[T], st *storeState, pods []*corev1.Pod) error {
	labels := labelMap(st.set.CNLabels)
	var failed []string
	for _, p := range pods {
		uuid := wire.StoreID(p.Namespace, p.Name)
		err := c.views.viaLogPod(st.logPods, func(base string) error {
			return hakeeper.SetCNLabels(ctx, c.views.http, base, uuid, labels)
		})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		ctx.Log.Info("Set a CN's labels", "pod", p.Name, "labels", labels)
		ctx.Event(corev1.EventTypeNormal, mov1.EventLabeled, "Set the labels of %s to %s", p.Name, formatLabels(st.set.CNLabels))
	}
	if len(failed) > 0 {
		return fmt.Errorf("setting CN labels: %s", strings.Join(failed, "; "))
	}
	return nil
}

// formatLabels writes labels as key=[v1,v2] pairs in key order; "none"
// when there are none.
func formatLabels(labels []mov1.CNLabel) string {
	if len(labels) == 0 {
		return "none"
	}
	var parts []string
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s=[%s]", l.Key, strings.Join(l.Values, ",")))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// validateCNLabels checks that each key and value is letters, digits and
// underscores, as mo_ctl's label command takes them.
func validateCNLabels(path *field.Path, labels []mov1.CNLabel) field.ErrorList {
	var errs field.ErrorList
	for i, l := range labels {
		if !labelWord(l.Key) {
			errs = append(errs, field.Invalid(path.Index(i).Child("key"), l.Key, "a label's key must be letters, digits and underscores"))
		}
		for j, v := range l.Values {
			if !labelWord(v) {
				errs = append(errs, field.Invalid(path.Index(i).Child("values").Index(j), v, "a label's value must be letters, digits and underscores"))
			}
		}
	}
	return errs
}

// labelWord reports whether s is one or more letters, digits and
// underscores.
func labelWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_'
	}) < 0
}
