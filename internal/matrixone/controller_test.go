package matrixone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// newCluster is a MatrixOneCluster "mo" of one log store and the CN
// groups named.
func newCluster(ns string, groups ...string) *mov1.MatrixOneCluster {
	c := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo"}, Spec: mov1.MatrixOneClusterSpec{
		SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: "shared"}},
		LogService:    mov1.LogServiceSpec{Replicas: 1},
	}}
	for _, g := range groups {
		c.Spec.CNGroups = append(c.Spec.CNGroups, mov1.CNGroupSpec{Name: g, Replicas: ptr.To[int32](1)})
	}
	return c
}

// runSet plays the StatefulSet controller and the kubelet for the set
// name once its StatefulSet exists (runPods).
func runSet(t *testing.T, c client.Client, ns, name, revision string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet "+name, func() (bool, string) { return get(t, c, ns, name, sts), "not yet" })
	runPods(t, c, sts, revision)
	return sts
}

func cluster(t *testing.T, c client.Client, ns string) *mov1.MatrixOneCluster {
	return get2(t, c, ns, "mo", &mov1.MatrixOneCluster{})
}

// editCluster changes the cluster's spec with edit, retrying conflicts.
func editCluster(t *testing.T, c client.Client, ns string, edit func(*mov1.MatrixOneCluster)) {
	t.Helper()
	testenv.Update(t, c, cluster(t, c, ns), edit)
}

// readyCluster creates the cluster "mo" with the CN groups named, plays
// its pods and HAKeeper's view, and waits until it is Ready.
func readyCluster(t *testing.T, groups ...string) (client.Client, string, *fakeAdmin, *hakeeperView) {
	t.Helper()
	return readyClusterWith(t, nil, groups...)
}

// readyClusterWith is readyCluster with opts applied to the controllers'
// options (after the test's admin).
func readyClusterWith(t *testing.T, opts func(*matrixone.Options), groups ...string) (client.Client, string, *fakeAdmin, *hakeeperView) {
	t.Helper()
	admin := &fakeAdmin{sessions: map[string]int{}}
	c, ns, probe := setupWith(t, func(o *matrixone.Options) {
		o.Admin, o.DrainSettle = admin, time.Second
		if opts != nil {
			opts(o)
		}
	})
	sharedClaim(t, c, ns)
	if err := c.Create(t.Context(), newCluster(ns, groups...)); err != nil {
		t.Fatal(err)
	}
	// Every set at once: each waits for the ones it needs by itself.
	for _, name := range []string{"mo-log", "mo-tn", "mo-proxy"} {
		get2Eventually(t, c, ns, name)
	}
	runSet(t, c, ns, "mo-log", "r1")
	view := &hakeeperView{View: *healthyView(ns, "mo-log-0"), probe: probe}
	view.publish()
	runSet(t, c, ns, "mo-tn", "t1")
	view.TNStores = []wire.TNStore{{UUID: wire.StoreID(ns, "mo-tn-0"), State: wire.StoreUp}}
	view.publish()
	for _, g := range groups {
		runSet(t, c, ns, "mo-"+g, "c1")
		view.CNStores = append(view.CNStores, wire.CNStore{UUID: wire.StoreID(ns, "mo-"+g+"-0"), State: wire.StoreUp, WorkState: wire.WorkStateWorking})
	}
	runSet(t, c, ns, "mo-proxy", "p1")
	view.ProxyStores = []wire.ProxyStore{{UUID: wire.StoreID(ns, "mo-proxy-0")}}
	view.publish()
	admin.setView(view) // from here on the view changes under the admin's lock
	eventually(t, "the cluster Ready", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	return c, ns, admin, view
}

// get2Eventually waits until a set of the given name exists.
func get2Eventually(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	eventually(t, "the set "+name, func() (bool, string) {
		for _, obj := range []client.Object{&mov1.LogSet{}, &mov1.TNSet{}, &mov1.CNSet{}, &mov1.ProxySet{}} {
			if get(t, c, ns, name, obj) {
				return true, ""
			}
		}
		return false, "not yet"
	})
}

func TestClusterMakesItsSets(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "a", "b")
	mc := cluster(t, c, ns)
	if mc.Status.SQLAddress != "mo-proxy."+ns+".svc:6001" || mc.Status.RootPasswordSecret != "mo-log-root" {
		t.Errorf("status %+v", mc.Status)
	}
	var names []string
	for _, s := range mc.Status.Sets {
		names = append(names, s.Kind+"/"+s.Name)
	}
	if got := strings.Join(names, " "); got != "LogSet/mo-log CNSet/mo-a CNSet/mo-b TNSet/mo-tn ProxySet/mo-proxy" {
		t.Errorf("the sets in rollout order: %s", got)
	}
	cn := get2(t, c, ns, "mo-a", &mov1.CNSet{})
	if cn.Spec.LogSet != "mo-log" || cn.Spec.Image != mov1.DefaultImage || !metav1.IsControlledBy(cn, mc) {
		t.Errorf("CNSet mo-a: %+v", cn.Spec)
	}
	if !get(t, c, ns, "mo-log-root", &corev1.Secret{}) {
		t.Error("no root password Secret")
	}
}

// A change to every role reaches the sets one at a time: the CNs only when
// the log service is Ready, the TN only when the CNs are.
func TestClusterRollsOutInOrder(t *testing.T) {
	c, ns, admin, _ := readyCluster(t, "a")
	// The log service not Ready: its store down to HAKeeper.
	admin.edit(func(v *hakeeper.View) { v.LogStores[0].State = wire.StoreDown })
	eventually(t, "the LogSet not Ready", func() (bool, string) {
		got := condition(get2(t, c, ns, "mo-log", &mov1.LogSet{}), framework.ConditionReady)
		return strings.HasPrefix(got, "False"), got
	})
	const debug = "[log]\nlevel = \"debug\"\n"
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) {
		mc.Spec.CNGroups[0].Config = debug
		mc.Spec.TN.Config = debug
	})
	eventually(t, "the cluster holding the CNs' change back", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, mov1.ReasonRollingOut), got
	})
	time.Sleep(time.Second)
	if get2(t, c, ns, "mo-a", &mov1.CNSet{}).Spec.Config == debug || get2(t, c, ns, "mo-tn", &mov1.TNSet{}).Spec.Config == debug {
		t.Fatal("a set got the change while the log service is not Ready")
	}

	// The log service Ready again: the CNs get the change; the TN waits
	// while the CNs restart.
	admin.edit(func(v *hakeeper.View) { v.LogStores[0].State = wire.StoreUp })
	eventually(t, "the CNs' change passed", func() (bool, string) {
		return get2(t, c, ns, "mo-a", &mov1.CNSet{}).Spec.Config == debug, "not yet"
	})
	// The CNs' StatefulSet has not even computed its new revision (its
	// controller is played below): the CNSet is not Ready, and the TN
	// waits.
	time.Sleep(2 * time.Second)
	if get2(t, c, ns, "mo-tn", &mov1.TNSet{}).Spec.Config == debug {
		t.Fatal("the TN got its change with the CNs")
	}
	// The CNs on their new revision (their StatefulSet's controller and
	// kubelet played here): the TN gets its change.
	sts := &appsv1.StatefulSet{}
	eventually(t, "the CN restarted", func() (bool, string) {
		sts = get2(t, c, ns, "mo-a", &appsv1.StatefulSet{})
		if sts.Status.UpdateRevision != "c2" || sts.Status.ObservedGeneration != sts.Generation {
			sts.Status.UpdateRevision, sts.Status.ObservedGeneration = "c2", sts.Generation
			if err := c.Status().Update(t.Context(), sts); err != nil {
				return false, err.Error()
			}
		}
		return !get(t, c, ns, "mo-a-0", &corev1.Pod{}), "still there"
	})
	runPod(t, c, sts, 0, "c2")
	eventually(t, "the TN's change passed", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return get2(t, c, ns, "mo-tn", &mov1.TNSet{}).Spec.Config == debug, got
	})
}

// A CN group removed from the spec drains to zero, then its CNSet goes.
func TestClusterRetiresARemovedGroup(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "a", "b")
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.CNGroups = mc.Spec.CNGroups[:1] })
	eventually(t, "mo-b scaled to zero", func() (bool, string) {
		cn := get2(t, c, ns, "mo-b", &mov1.CNSet{})
		return ptr.Deref(cn.Spec.Replicas, 1) == 0, fmt.Sprint(cn.Spec.Replicas)
	})
	// Its CN drains (no session), then the StatefulSet scales in; the
	// StatefulSet controller's deletion is played here.
	eventually(t, "mo-b's StatefulSet at zero", func() (bool, string) {
		sts := get2(t, c, ns, "mo-b", &appsv1.StatefulSet{})
		return *sts.Spec.Replicas == 0, fmt.Sprint(*sts.Spec.Replicas)
	})
	sts := get2(t, c, ns, "mo-b", &appsv1.StatefulSet{})
	sts.Status.ObservedGeneration, sts.Status.Replicas, sts.Status.ReadyReplicas = sts.Generation, 0, 0
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo-b-0"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "mo-b deleted, the cluster Ready", func() (bool, string) {
		cn := &mov1.CNSet{}
		gone := !get(t, c, ns, "mo-b", cn) || !cn.DeletionTimestamp.IsZero()
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return gone && strings.HasPrefix(got, "True"), got
	})
	if got := condition(cluster(t, c, ns), commonv1.ConditionProgressing); !strings.HasPrefix(got, "False") {
		t.Errorf("Progressing %s", got)
	}
}
