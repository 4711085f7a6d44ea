package oceanbase

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// readyCluster is what a pass observes of a bootstrapped cluster of zones
// z1 (two observers) and z2 (one), every one serving, as changed by
// change: its spec and the cluster's observation, from which writeStatus
// and setReady make status.
func readyCluster(change func(*obv1.OBCluster, *cluster)) (*obv1.OBCluster, *cluster) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	started := at.Time
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Name: "ob"}, Spec: obv1.OBClusterSpec{
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2", Replicas: 1}},
	}, Status: obv1.OBClusterStatus{BootstrappedAt: &at}}
	cl := &cluster{sets: map[string]*appsv1.StatefulSet{}, pods: map[string]map[int]*corev1.Pod{}, ips: map[string]string{},
		servers: map[string]obsql.Server{}, zones: map[string]obsql.Zone{}, leaving: map[string]*leavingZone{}, db: nil}
	n := 0
	addPod := func(zone string, o int) {
		n++
		name := fmt.Sprintf("ob-%s-%d", zone, o)
		if cl.pods[zone] == nil {
			cl.pods[zone] = map[int]*corev1.Pod{}
		}
		cl.pods[zone][o] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		cl.ips[name] = fmt.Sprintf("10.0.0.%d", n)
		cl.servers[cl.addr(name)] = obsql.Server{Addr: cl.addr(name), Zone: zone, Status: "ACTIVE", StartService: &started}
	}
	for _, z := range ob.Spec.Zones {
		cl.zones[z.Name] = obsql.Zone{Name: z.Name, Status: "ACTIVE"}
		cl.sets[z.Name] = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(z.Replicas)}}
		for o := range int(z.Replicas) {
			addPod(z.Name, o)
		}
	}
	cl.tenants = []obsql.Tenant{{ID: 1, Name: "sys", Type: "SYS", Locality: "FULL{1}@z1, FULL{1}@z2"}}
	if change != nil {
		change(ob, cl)
	}
	return ob, cl
}

// TestClusterReady: the cluster is Ready only when what its views say
// and OceanBase's servers and sys tenant agree that every observer of the
// spec serves and nothing else is going on; otherwise the reason and
// message say what is missing (issue 27 item 12).
func TestClusterReady(t *testing.T) {
	for _, tc := range []struct {
		name            string
		change          func(*obv1.OBCluster, *cluster)
		ready           bool
		reason, message string
	}{
		{name: "serving", ready: true, message: "3 servers in 2 zones serving"},
		{name: "a pod missing while OceanBase still reports its server ACTIVE", change: func(_ *obv1.OBCluster, cl *cluster) {
			delete(cl.pods["z1"], 1)
		}, reason: obv1.ReasonServersNotServing, message: "zone z1: ob-z1-1 has no pod"},
		{name: "a pod not ready", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.pods["z2"][0].Status.Conditions = nil
		}, reason: obv1.ReasonServersNotServing, message: "zone z2: ob-z2-0's pod is not ready"},
		{name: "a zone re-added, not in the sys tenant's locality yet", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.tenants[0].Locality = "FULL{1}@z1"
		}, reason: obv1.ReasonZonesChanging, message: "the sys tenant has no replica in zone z2 yet (locality FULL{1}@z1)"},
		{name: "the sys tenant's locality changing", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.tenants[0].PreviousLocality = "FULL{1}@z1"
		}, reason: obv1.ReasonZonesChanging, message: "OceanBase is changing the sys tenant's locality from FULL{1}@z1 to FULL{1}@z1, FULL{1}@z2"},
		{name: "a scale-in's server deleting", change: func(ob *obv1.OBCluster, cl *cluster) {
			ob.Spec.Zones[0].Replicas = 1
			srv := cl.servers["10.0.0.2:2882"]
			srv.Status, srv.StartService = "DELETING", nil
			cl.servers["10.0.0.2:2882"] = srv
		}, reason: obv1.ReasonServersLeaving, message: "OceanBase still has servers the spec does not: ob-z1-1 of zone z1 (DELETING)"},
		{name: "a leaving zone's servers serving", change: func(ob *obv1.OBCluster, cl *cluster) {
			ob.Spec.Zones = ob.Spec.Zones[:1]
			cl.leaving["z2"] = &leavingZone{set: cl.sets["z2"], pods: cl.pods["z2"]}
			delete(cl.pods, "z2")
		}, reason: obv1.ReasonServersLeaving, message: "OceanBase still has servers the spec does not: ob-z2-0 of zone z2 (ACTIVE)"},
		{name: "a server at no observer's address", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.servers["10.0.0.9:2882"] = obsql.Server{Addr: "10.0.0.9:2882", Zone: "z2", Status: "INACTIVE"}
		}, reason: obv1.ReasonServersLeaving, message: "OceanBase still has servers the spec does not: 10.0.0.9:2882 of zone z2 (INACTIVE)"},
		{name: "a zone inactive", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.zones["z2"] = obsql.Zone{Name: "z2", Status: "INACTIVE"}
		}, reason: obv1.ReasonServersNotServing, message: "zone z2: OceanBase reports the zone INACTIVE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob, cl := readyCluster(tc.change)
			c := &Controller{}
			c.writeStatus(ob, cl)
			c.setReady(&Context{Obj: ob}, cl)
			r := meta.FindStatusCondition(ob.Status.Conditions, framework.ConditionReady)
			if r == nil {
				t.Fatal("no Ready condition")
			}
			ready := r.Status == metav1.ConditionTrue
			if ready != tc.ready || !tc.ready && r.Reason != tc.reason || r.Message != tc.message {
				t.Errorf("Ready %s %s %q; want %v %s %q", r.Status, r.Reason, r.Message, tc.ready, tc.reason, tc.message)
			}
			if strings.Contains(r.Message, " of ") && strings.Contains(r.Message, "servers serving") && !tc.ready {
				t.Errorf("Ready False says %q: a count, not what is missing", r.Message)
			}
		})
	}
}

// TestStoresLost: StoresLost says which servers lost their store and
// whether the recover flow replaces them; a pass that could not read
// OceanBase leaves it as it was.
func TestStoresLost(t *testing.T) {
	lost := []obv1.OBLostServer{{Address: "10.0.0.2:2882", Pod: "ob-z1-1", Zone: "z1"}}
	for _, tc := range []struct {
		name            string
		change          func(*obv1.OBCluster, *cluster)
		status          metav1.ConditionStatus
		reason, message string
	}{
		{name: "none lost", status: metav1.ConditionFalse, reason: obv1.ReasonNoStoreLost},
		{name: "one lost", change: func(_ *obv1.OBCluster, cl *cluster) { cl.lost = lost },
			status: metav1.ConditionTrue, reason: obv1.ReasonRecovering, message: "lost stores: 10.0.0.2:2882 (ob-z1-1); recovering"},
		{name: "one lost without a majority", change: func(_ *obv1.OBCluster, cl *cluster) {
			cl.lost, cl.unrecoverable = lost, "only 1 of 3 zones serve (z2)"
		}, status: metav1.ConditionTrue, reason: obv1.ReasonMajorityLost,
			message: "lost stores: 10.0.0.2:2882 (ob-z1-1); not recovered while only 1 of 3 zones serve (z2)"},
		{name: "OceanBase not read", change: func(ob *obv1.OBCluster, cl *cluster) {
			cl.db = nil
			ob.Status.Conditions = []metav1.Condition{{Type: obv1.ConditionStoresLost, Status: metav1.ConditionTrue,
				Reason: obv1.ReasonRecovering, Message: "as it was"}}
		}, status: metav1.ConditionTrue, reason: obv1.ReasonRecovering, message: "as it was"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob, cl := readyCluster(nil)
			cl.db = &sql.DB{} // read; never used
			if tc.change != nil {
				tc.change(ob, cl)
			}
			(&Controller{}).setStoresLost(&Context{Obj: ob}, cl)
			c := meta.FindStatusCondition(ob.Status.Conditions, obv1.ConditionStoresLost)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("StoresLost %+v; want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			if got := cl.toRecover(); (len(got) > 0) != (tc.reason == obv1.ReasonRecovering && cl.db != nil) {
				t.Errorf("toRecover() = %v with StoresLost %s", got, tc.reason)
			}
		})
	}
}

// TestParameterDriftKept: status.parameterDrift is what the pass read, and
// stays as it was when OceanBase did not answer that far.
func TestParameterDriftKept(t *testing.T) {
	was := []obv1.ParameterDrift{{Name: "syslog_level", Servers: []string{"10.0.0.1:2882=WDIAG"}}}
	ob, cl := readyCluster(func(ob *obv1.OBCluster, _ *cluster) { ob.Status.ParameterDrift = was })
	c := &Controller{}
	c.writeStatus(ob, cl)
	if len(ob.Status.ParameterDrift) != 1 {
		t.Errorf("not read: parameterDrift %v; want it kept", ob.Status.ParameterDrift)
	}
	cl.drift, cl.driftRead = nil, true
	c.writeStatus(ob, cl)
	if ob.Status.ParameterDrift != nil {
		t.Errorf("read, none drifted: parameterDrift %v; want none", ob.Status.ParameterDrift)
	}
}
