package matrixone_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// readyLogSet creates the LogSet "log" with its pods and a view of
// HAKeeper running, and waits until it is Ready.
func readyLogSet(t *testing.T, c client.Client, ns string, probe *fakeProbe) *hakeeperView {
	t.Helper()
	sharedClaim(t, c, ns)
	if err := c.Create(t.Context(), newLogSet(ns)); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	eventually(t, "the log StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "not yet" })
	runPods(t, c, sts, "r1")
	v := &hakeeperView{View: *healthyView(ns, pods...), probe: probe}
	v.publish()
	eventually(t, "the LogSet Ready", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	return v
}

func TestStoreSetsJoinTheLogSetInOrder(t *testing.T) {
	c, ns, probe := setup(t)
	tn := &mov1.TNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tn"}, Spec: mov1.TNSetSpec{LogSet: "log"}}
	if err := c.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the TNSet waiting for the LogSet", func() (bool, string) {
		got := condition(get2(t, c, ns, "tn", &mov1.TNSet{}), framework.ConditionDependenciesReady)
		return strings.HasPrefix(got, "False") && strings.Contains(got, "LogSet log"), got
	})
	view := readyLogSet(t, c, ns, probe)

	tnSts := &appsv1.StatefulSet{}
	eventually(t, "the TN's StatefulSet", func() (bool, string) { return get(t, c, ns, "tn", tnSts), "not yet" })
	cm := &corev1.ConfigMap{}
	if !get(t, c, ns, tnSts.Spec.Template.Spec.Volumes[0].ConfigMap.Name, cm) ||
		!strings.Contains(cm.Data["tn.toml"], "log-0.log-headless."+ns+".svc:32001") {
		t.Fatalf("the TN's template lacks HAKeeper's addresses: %v", cm.Data)
	}

	// CNs wait for HAKeeper to hear from a TN.
	cn := &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cn"}, Spec: mov1.CNSetSpec{LogSet: "log", Replicas: ptr.To[int32](2)}}
	proxy := &mov1.ProxySet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxy"}, Spec: mov1.ProxySetSpec{LogSet: "log"}}
	for _, obj := range []client.Object{cn, proxy} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the CNSet waiting for a TN", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), framework.ConditionReady)
		return strings.Contains(got, mov1.ReasonWaitingForTN), got
	})
	if get(t, c, ns, "cn", &appsv1.StatefulSet{}) {
		t.Fatal("the CNs' StatefulSet exists before HAKeeper hears from a TN")
	}

	runPods(t, c, tnSts, "t1")
	view.TNStores = []wire.TNStore{{UUID: wire.StoreID(ns, "tn-0"), State: wire.StoreUp}}
	view.publish()
	eventually(t, "the TNSet Ready", func() (bool, string) {
		got := condition(get2(t, c, ns, "tn", &mov1.TNSet{}), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})

	cnSts := &appsv1.StatefulSet{}
	eventually(t, "the CNs' StatefulSet", func() (bool, string) { return get(t, c, ns, "cn", cnSts), "not yet" })
	runPods(t, c, cnSts, "c1")
	for _, pod := range []string{"cn-0", "cn-1"} {
		view.CNStores = append(view.CNStores, wire.CNStore{UUID: wire.StoreID(ns, pod), State: wire.StoreUp, WorkState: wire.WorkStateWorking})
	}
	proxySts := &appsv1.StatefulSet{}
	eventually(t, "the proxies' StatefulSet", func() (bool, string) { return get(t, c, ns, "proxy", proxySts), "not yet" })
	runPods(t, c, proxySts, "p1")
	view.ProxyStores = []wire.ProxyStore{{UUID: wire.StoreID(ns, "proxy-0")}}
	view.publish()
	got := &mov1.CNSet{}
	eventually(t, "the CNSet Ready", func() (bool, string) {
		got = get2(t, c, ns, "cn", &mov1.CNSet{})
		c := condition(got, framework.ConditionReady)
		return strings.HasPrefix(c, "True"), c
	})
	if got.Status.SQLAddress != "cn."+ns+".svc:6001" || len(got.Status.Stores) != 2 || got.Status.Stores[1].WorkState != wire.WorkStateWorking {
		t.Errorf("CNSet status %+v", got.Status)
	}
	eventually(t, "the ProxySet Ready", func() (bool, string) {
		c := condition(get2(t, c, ns, "proxy", &mov1.ProxySet{}), framework.ConditionReady)
		return strings.HasPrefix(c, "True"), c
	})
	svc := &corev1.Service{}
	if !get(t, c, ns, "proxy", svc) || svc.Spec.Ports[0].Port != build.SQLPort || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("the proxy's SQL Service %+v", svc.Spec)
	}
	if get(t, c, ns, "data-proxy-0", &corev1.PersistentVolumeClaim{}) || len(proxySts.Spec.VolumeClaimTemplates) != 0 {
		t.Error("the proxies have volumes")
	}

	// A CN HAKeeper stops hearing from: the CNSet is not Ready, still
	// Available.
	view.CNStores[1].State = wire.StoreDown
	view.publish()
	eventually(t, "the CNSet StoresDown", func() (bool, string) {
		got := get2(t, c, ns, "cn", &mov1.CNSet{})
		r := condition(got, framework.ConditionReady)
		return strings.Contains(r, "the store of cn-1 is Down") && strings.HasPrefix(condition(got, "Available"), "True"), r
	})
}
