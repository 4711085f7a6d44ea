package oceanbase_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// A recovery waits for OceanBase's lease, then walks six steps.

// obServers are the servers OceanBase lists, address → status, as the
// newest state among the observers has them.
func (p *player) obServers() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	var newest int64 = -1
	for _, n := range p.nodes {
		s := n.Snapshot()
		if s == nil || s.Version <= newest {
			continue
		}
		newest = s.Version
		clear(out)
		for _, sv := range s.Servers {
			out[sv.Addr] = sv.Status
		}
	}
	return out
}

// statements counts the statements the observers received that contain
// each of parts.
func (p *player) statements(parts ...string) int {
	p.stmtMu.Lock()
	defer p.stmtMu.Unlock()
	n := 0
	for _, q := range p.stmts {
		if !slices.ContainsFunc(parts, func(part string) bool { return !strings.Contains(q, part) }) {
			n++
		}
	}
	return n
}

func newCluster(t *testing.T, c client.Client, ns string, zones ...obv1.OBZoneSpec) *obv1.OBCluster {
	t.Helper()
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"},
		Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: zones}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	want := int32(0)
	for _, z := range zones {
		want += max(z.Replicas, 1)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", want))
	return get(t, c, ns, "ob")
}

// addressOf is pod's server address, as its Service has it now.
func addressOf(t *testing.T, c client.Client, ns, pod string) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, svc); err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, build.RPCPort)
}

// loseStore deletes pod's volume claim and then the pod, as when its node
// is lost with its local volume: the observer comes back empty.
func loseStore(t *testing.T, c client.Client, ns, pod string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: build.DataVolume + "-" + pod}}
	if err := c.Delete(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}); err != nil {
		t.Fatal(err)
	}
}

// recovered waits until the cluster serves with active servers after a
// recover flow, OceanBase no longer lists the lost addresses, and each
// recovered pod is a server at a new address.
func recovered(t *testing.T, c client.Client, p *player, ns string, active int32, lost map[string]string) {
	t.Helper()
	eventually(t, "the recovery", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", active)(); !ok {
			return false, why
		}
		ob := &obv1.OBCluster{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ob"}, ob); err != nil {
			return false, err.Error()
		}
		if op := ob.Status.Operation; op == nil || op.Name != "recover" || op.Phase != "Succeeded" {
			return false, fmt.Sprintf("operation %+v", op)
		}
		if len(ob.Status.LostServers) > 0 {
			return false, fmt.Sprintf("lost servers %v", ob.Status.LostServers)
		}
		servers := p.obServers()
		for pod, old := range lost {
			addr := addressOf(t, c, ns, pod)
			if _, listed := servers[old]; listed || addr == old || servers[addr] != "ACTIVE" {
				return false, fmt.Sprintf("%s: lost %s, now %s; OceanBase lists %v", pod, old, addr, servers)
			}
		}
		return true, ""
	})
	// The status that says the flow succeeded says the stores are back: the
	// pass that ends the flow sets StoresLost, not a later one (none may
	// come soon once the cluster is Ready).
	if c := meta.FindStatusCondition(get(t, c, ns, "ob").Status.Conditions, "StoresLost"); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("StoresLost once recovered: %+v, want False", c)
	}
}

// TestRecoverLostStore: a pod deleted on its own volume comes back as the
// same server, with no flow; an observer whose claim is deleted with its
// pod comes back empty and is recovered at a new address, the lost server
// deleted from OceanBase.
func TestRecoverLostStore(t *testing.T) {
	c, ns, p := setup(t, 181)
	ob := newCluster(t, c, ns, obv1.OBZoneSpec{Name: "z1"}, obv1.OBZoneSpec{Name: "z2"}, obv1.OBZoneSpec{Name: "z3"})

	restarted := build.PodName(ob, "z1", 0)
	addr := addressOf(t, c, ns, restarted)
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restarted}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past the lease
	eventually(t, "the restarted observer serves", readyWith(c, ns, "ob", 3))
	if op := get(t, c, ns, "ob").Status.Operation; op.Name != "bootstrap" || addressOf(t, c, ns, restarted) != addr {
		t.Fatalf("a pod restarted on its volume: operation %+v, address %s (was %s)", op, addressOf(t, c, ns, restarted), addr)
	}

	pod := build.PodName(ob, "z2", 0)
	old := addressOf(t, c, ns, pod)
	loseStore(t, c, ns, pod)
	recovered(t, c, p, ns, 3, map[string]string{pod: old})
	if n := p.statements("ADD SERVER"); n != 1 {
		t.Errorf("%d ADD SERVER statements, want 1", n)
	}
	if n := p.statements("DELETE SERVER", old); n != 1 {
		t.Errorf("%d DELETE SERVER statements of %s, want 1", n, old)
	}
}

// TestRecoverLostZone loses both observers of the RootService's zone with
// their volumes: the other zones elect a RootService and the zone is
// recovered at once.
func TestRecoverLostZone(t *testing.T) {
	c, ns, p := setup(t, 182)
	ob := newCluster(t, c, ns, obv1.OBZoneSpec{Name: "z1", Replicas: 2}, obv1.OBZoneSpec{Name: "z2"}, obv1.OBZoneSpec{Name: "z3"})
	lost := map[string]string{}
	for o := range 2 {
		pod := build.PodName(ob, "z1", o)
		lost[pod] = addressOf(t, c, ns, pod)
		loseStore(t, c, ns, pod)
	}
	recovered(t, c, p, ns, 4, lost)
}

// TestRecoverManagerRestarted is ob-operator #141: the manager stops once
// the lost observer's Service is re-created, and again once the
// replacement is added; the next one finishes the same flow, having added
// the server once.
func TestRecoverManagerRestarted(t *testing.T) {
	c, ns, p := setup(t, 183)
	ob := newCluster(t, c, ns, obv1.OBZoneSpec{Name: "z1"}, obv1.OBZoneSpec{Name: "z2"}, obv1.OBZoneSpec{Name: "z3"})
	pod := build.PodName(ob, "z3", 0)
	old := addressOf(t, c, ns, pod)
	loseStore(t, c, ns, pod)
	eventually(t, "a new address", func() (bool, string) {
		addr := addressOf(t, c, ns, pod)
		return addr != old && addr != ":2882", addr
	})
	p.stopManager()
	op := get(t, c, ns, "ob").Status.Operation
	if op == nil || op.Name != "recover" || !op.Phase.Active() {
		t.Fatalf("the manager stopped with operation %+v", op)
	}
	t.Logf("Manager stopped at step %s, %d ADD SERVER sent", op.Step, p.statements("ADD SERVER"))
	time.Sleep(time.Second)
	p.startManager()
	// Stopped again as soon as the server is added, before or after the
	// step that added it is recorded: the next manager adds it no more.
	eventually(t, "the replacement added", func() (bool, string) { return p.statements("ADD SERVER") > 0, "" })
	p.stopManager()
	p.startManager()
	recovered(t, c, p, ns, 3, map[string]string{pod: old})
	if n := p.statements("ADD SERVER"); n != 1 {
		t.Errorf("%d ADD SERVER statements, want 1", n)
	}
	if after := get(t, c, ns, "ob").Status.Operation; !after.StartedAt.Equal(&op.StartedAt) || after.Attempts != 0 {
		t.Errorf("the flow was not resumed: %+v, then %+v", op, after)
	}
}

// TestRecoverPodDeletedAgain is ob-operator #482: the recovering
// observer's pod is deleted again, once it has its new address and once it
// is a server; the flow still ends.
func TestRecoverPodDeletedAgain(t *testing.T) {
	c, ns, p := setup(t, 184)
	ob := newCluster(t, c, ns, obv1.OBZoneSpec{Name: "z1"}, obv1.OBZoneSpec{Name: "z2"}, obv1.OBZoneSpec{Name: "z3"})
	pod := build.PodName(ob, "z2", 0)
	old := addressOf(t, c, ns, pod)
	loseStore(t, c, ns, pod)
	deletePod := func() {
		err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a new address", func() (bool, string) {
		addr := addressOf(t, c, ns, pod)
		return addr != old && addr != ":2882", addr
	})
	deletePod()
	eventually(t, "the replacement added", func() (bool, string) {
		return p.statements("ADD SERVER") > 0, ""
	})
	deletePod()
	recovered(t, c, p, ns, 3, map[string]string{pod: old})
}

// TestRecoverPodTerminating: the recovering observer's pod is bound to a
// node before the flow restarts it, so the restart's DELETE leaves it
// terminating until the kubelet ends it, as in a real cluster. The same
// state follows a manager stopped during that DELETE on an unbound pod:
// the API server marks the pod deleted, then its request is canceled
// before it removes it (TestRecoverManagerRestarted, now and then). The
// flow waits for the pod to go and still ends.
func TestRecoverPodTerminating(t *testing.T) {
	c, ns, p := setup(t, 185)
	ob := newCluster(t, c, ns, obv1.OBZoneSpec{Name: "z1"}, obv1.OBZoneSpec{Name: "z2"}, obv1.OBZoneSpec{Name: "z3"})
	pod := build.PodName(ob, "z3", 0)
	old := addressOf(t, c, ns, pod)
	before := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, before); err != nil {
		t.Fatal(err)
	}
	loseStore(t, c, ns, pod)
	// The empty observer's pod, bound well before the lease runs out and
	// the flow restarts it.
	again := &corev1.Pod{}
	eventually(t, "the pod on a new claim", func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, again); err != nil {
			return false, err.Error()
		}
		return again.UID != before.UID && workload.IsReady(again), string(again.UID)
	})
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	if err := c.SubResource("binding").Create(t.Context(), again, binding); err != nil {
		t.Fatal(err)
	}
	recovered(t, c, p, ns, 3, map[string]string{pod: old})
	if n := p.statements("ADD SERVER"); n != 1 {
		t.Errorf("%d ADD SERVER statements, want 1", n)
	}
}
