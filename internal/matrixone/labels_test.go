package matrixone_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestCNSetLabelsItsCNsInHAKeeper: spec.labels are set on every CN in
// HAKeeper through a log pod's probe; the set is not Ready until HAKeeper's
// view shows them, and status shows HAKeeper's labels; a CN whose labels
// HAKeeper lost is labeled again.
func TestCNSetLabelsItsCNsInHAKeeper(t *testing.T) {
	c, ns, admin, view := readyCNs(t, 2, time.Hour)
	probe := admin.probe
	testenv.Update(t, c, &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cn"}},
		func(cn *mov1.CNSet) { cn.Spec.Labels = []mov1.CNLabel{{Key: "account", Values: []string{"acc1"}}} })
	const want = `{"account":["acc1"]}`
	testenv.Eventually(t, "both CNs labeled, the set not Ready until HAKeeper shows it", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), framework.ConditionReady)
		return probe.labelsOf(ns, "cn-0") == want && probe.labelsOf(ns, "cn-1") == want &&
			strings.HasPrefix(got, "False "+mov1.ReasonLabeling+": the labels of cn-0 in HAKeeper are none, not account=[acc1]"), got
	})

	for i := range view.CNStores {
		view.CNStores[i].Labels = map[string][]string{"account": {"acc1"}}
	}
	view.publish()
	testenv.Eventually(t, "the CNSet Ready, status showing the labels", func() (bool, string) {
		cn := get2(t, c, ns, "cn", &mov1.CNSet{})
		got := fmt.Sprintf("%s %+v", condition(cn, framework.ConditionReady), cn.Status.Stores)
		return strings.HasPrefix(got, "True") && len(cn.Status.Stores) == 2 &&
			len(cn.Status.Stores[1].Labels) == 1 && cn.Status.Stores[1].Labels[0].Key == "account" &&
			slices.Equal(cn.Status.Stores[1].Labels[0].Values, []string{"acc1"}), got
	})
	testenv.Eventually(t, "a Labeled event", func() (bool, string) {
		var events corev1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == mov1.EventLabeled && e.Message == "Set the labels of cn-1 to account=[acc1]"
		}), "none yet"
	})

	// HAKeeper lost cn-1's labels (its record expired and came back).
	probe.mu.Lock()
	delete(probe.labels, view.CNStores[1].UUID)
	probe.mu.Unlock()
	view.CNStores[1].Labels = nil
	view.publish()
	testenv.Eventually(t, "cn-1 labeled again", func() (bool, string) {
		return probe.labelsOf(ns, "cn-1") == want, probe.labelsOf(ns, "cn-1")
	})
}
