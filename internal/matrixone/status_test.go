package matrixone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// Status says what is true even where HAKeeper's view lags: HAKeeper
// counts a store up until its heartbeat timeout (minutes), long after its
// pod is gone.

func TestLogSetStatusSaysAStoreWhosePodIsGoneIsDown(t *testing.T) {
	c, ns, probe := setup(t)
	readyLogSet(t, c, ns, probe) // HAKeeper hears from every store, and goes on saying so
	if err := c.Delete(t.Context(), get2(t, c, ns, "log-1", &corev1.Pod{})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "log-1's store Down, each shard with 2 of 3 replicas up", func() (bool, string) {
		l := logSet(t, c, ns)
		got := fmt.Sprintf("stores %+v shards %+v", l.Status.Stores, l.Status.Shards)
		if len(l.Status.Stores) != 3 || len(l.Status.Shards) != 2 {
			return false, got
		}
		for _, sh := range l.Status.Shards {
			if sh.Replicas != 2 {
				return false, got
			}
		}
		return l.Status.Stores[1].State == mov1.StoreDown && l.Status.Stores[0].State == mov1.StoreUp, got
	})
}

func TestCNSetStatusSaysACNWhosePodIsGoneIsDown(t *testing.T) {
	c, ns, _, _ := readyCNs(t, 2, time.Hour)
	// The StatefulSet keeps its replicas; the pod is gone until it comes
	// back.
	if err := c.Delete(t.Context(), get2(t, c, ns, "cn-1", &corev1.Pod{})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cn-1's store Down", func() (bool, string) {
		cn := get2(t, c, ns, "cn", &mov1.CNSet{})
		got := fmt.Sprintf("%+v", cn.Status.Stores)
		return len(cn.Status.Stores) == 2 && cn.Status.Stores[1].State == mov1.StoreDown && cn.Status.Stores[0].State == mov1.StoreUp, got
	})
}

// TestCNDrainWithoutAViewOfHAKeeperSaysSo: a drain that cannot go on for
// want of HAKeeper's view says that, not that no CN serves.
func TestCNDrainWithoutAViewOfHAKeeperSaysSo(t *testing.T) {
	c, ns, admin, _ := readyCNsWith(t, 2, time.Hour, func(o *matrixone.Options) { o.MaxViewAge = time.Second })
	cn1 := wire.StoreID(ns, "cn-1")
	admin.setSessions(cn1, 1)
	scaleCNs(t, c, ns, 1)
	eventually(t, "the CNSet counting cn-1's sessions", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), commonv1.ConditionProgressing)
		return strings.Contains(got, "1 sessions"), got
	})
	admin.probe.set(nil) // the probes answer 503
	eventually(t, "the CNSet saying it has no view of HAKeeper", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), commonv1.ConditionProgressing)
		return strings.Contains(got, "no view of HAKeeper") && strings.Contains(got, "cn-1") && !strings.Contains(got, "no other CN"), got
	})
}

// TestCNUndrainedOnce: a CN the set keeps is set Working once, with one
// Undrained Event, although HAKeeper's view shows it a moment later.
func TestCNUndrainedOnce(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	cn1 := wire.StoreID(ns, "cn-1")
	admin.setSessions(cn1, 1)
	scaleCNs(t, c, ns, 1)
	eventually(t, "cn-1 draining", func() (bool, string) {
		return admin.workState(cn1) == wire.WorkStateDraining, admin.workState(cn1)
	})
	admin.setLag(600 * time.Millisecond)
	scaleCNs(t, c, ns, 2)
	eventually(t, "cn-1 working again, the set Ready", func() (bool, string) {
		ready := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), framework.ConditionReady)
		return admin.workState(cn1) == wire.WorkStateWorking && strings.HasPrefix(ready, "True"), admin.workState(cn1) + " " + ready
	})
	time.Sleep(2 * time.Second)
	if n := admin.workStateCalls(cn1, mosql.Working); n != 1 {
		t.Errorf("cn-1 was set Working %d times", n)
	}
	if n := countEvents(t, c, ns, mov1.EventUndrained, "cn-1"); n != 1 {
		t.Errorf("%d Undrained Events for cn-1", n)
	}
}

// countEvents counts the Events of reason whose message names what, with
// their repeats.
func countEvents(t *testing.T, c client.Client, ns, reason, what string) int {
	t.Helper()
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason != reason || !strings.Contains(e.Message, what) {
			continue
		}
		switch {
		case e.Series != nil:
			n += int(e.Series.Count)
		case e.Count > 0:
			n += int(e.Count)
		default:
			n++
		}
	}
	return n
}

// TestPrinterColumnsSayWhy: every MatrixOne kind's table has a Reason
// column, the Ready condition's reason, so that a user sees why a set is
// not Ready, and every set's an Operation column, the flow it runs.
func TestPrinterColumnsSayWhy(t *testing.T) {
	c, _, _ := setup(t)
	for _, plural := range []string{"matrixoneclusters", "logsets", "tnsets", "cnsets", "proxysets"} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(t.Context(), client.ObjectKey{Name: plural + "." + mov1.GroupVersion.Group}, crd); err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			columns, _, _ := unstructured.NestedSlice(v.(map[string]any), "additionalPrinterColumns")
			found, operation := false, false
			for _, col := range columns {
				col := col.(map[string]any)
				if col["name"] == "Reason" && col["jsonPath"] == `.status.conditions[?(@.type=="Ready")].reason` {
					found = true
				}
				if col["name"] == "Operation" && col["jsonPath"] == `.status.operation.name` {
					operation = true
				}
			}
			if !found {
				t.Errorf("%s has no Reason column: %v", plural, columns)
			}
			// The sets run flows: their tables name the one running.
			if !operation && plural != "matrixoneclusters" {
				t.Errorf("%s has no Operation column: %v", plural, columns)
			}
		}
	}
}
