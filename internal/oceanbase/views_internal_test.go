package oceanbase

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// viewCluster is a bootstrapped two-zone cluster whose status says what
// the cases change.
func viewCluster(change func(*obv1.OBCluster)) *obv1.OBCluster {
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Name: "ob"}, Spec: obv1.OBClusterSpec{
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2", Replicas: 1}},
	}, Status: obv1.OBClusterStatus{
		BootstrappedAt: &start,
		RootService:    "10.0.0.1:2882",
		Zones: []obv1.OBZoneStatus{{Name: "z1", Status: "ACTIVE", Servers: 2, ActiveServers: 2},
			{Name: "z2", Status: "ACTIVE", Servers: 1, ActiveServers: 1}},
		Servers: []obv1.OBServerStatus{
			{Pod: "ob-z1-0", Zone: "z1", Address: "10.0.0.1:2882", PodReady: true, Status: "ACTIVE", StartServiceTime: &start,
				BuildVersion: "4.3.5.1", Image: "ob:1"},
			{Pod: "ob-z1-1", Zone: "z1", Address: "10.0.0.2:2882", PodReady: true, Status: "ACTIVE", StartServiceTime: &start},
			{Pod: "ob-z2-0", Zone: "z2", Address: "10.0.0.3:2882", PodReady: true, Status: "ACTIVE", StartServiceTime: &start},
		},
	}}
	ob.Status.Conditions = []metav1.Condition{{Type: framework.ConditionReady, Status: metav1.ConditionTrue, Reason: framework.ReasonReconciled}}
	if change != nil {
		change(ob)
	}
	return ob
}

func TestZoneView(t *testing.T) {
	for _, tc := range []struct {
		name            string
		zone            string
		change          func(*obv1.OBCluster)
		ready           bool
		reason, message string
		status          string
		active, pods    int32
	}{
		{name: "serving", zone: "z1", ready: true, reason: obv1.ReasonZoneServing, message: "ACTIVE, 2 servers serving",
			status: "ACTIVE", active: 2, pods: 2},
		{name: "not bootstrapped", zone: "z1", change: func(ob *obv1.OBCluster) { ob.Status.BootstrappedAt = nil },
			reason: obv1.ReasonNotBootstrapped, status: "ACTIVE", active: 2, pods: 2},
		{name: "unreachable", zone: "z2", change: func(ob *obv1.OBCluster) {
			ob.Status.Conditions[0] = metav1.Condition{Type: framework.ConditionReady, Status: metav1.ConditionFalse,
				Reason: obv1.ReasonUnreachable, Message: "no observer answered"}
			ob.Status.Zones[1].Status, ob.Status.Zones[1].ActiveServers = "", 0
		}, reason: obv1.ReasonClusterUnreachable, message: "OBCluster ob: no observer answered", pods: 1},
		{name: "zone inactive", zone: "z2", change: func(ob *obv1.OBCluster) { ob.Status.Zones[1].Status = "INACTIVE" },
			reason: obv1.ReasonZoneNotActive, message: "OceanBase reports the zone INACTIVE", status: "INACTIVE", active: 1, pods: 1},
		{name: "a server inactive", zone: "z1", change: func(ob *obv1.OBCluster) {
			ob.Status.Servers[1].Status, ob.Status.Servers[1].StartServiceTime = "INACTIVE", nil
			ob.Status.Zones[0].ActiveServers = 1
		}, reason: obv1.ReasonServersNotServing, message: "ob-z1-1 is INACTIVE", status: "ACTIVE", active: 1, pods: 2},
		{name: "a pod not ready", zone: "z1", change: func(ob *obv1.OBCluster) { ob.Status.Servers[0].PodReady = false },
			reason: obv1.ReasonServersNotServing, message: "ob-z1-0's pod is not ready", status: "ACTIVE", active: 2, pods: 1},
		{name: "a pod missing", zone: "z1", change: func(ob *obv1.OBCluster) { ob.Status.Servers = ob.Status.Servers[1:] },
			reason: obv1.ReasonServersNotServing, message: "ob-z1-0 has no pod", status: "ACTIVE", active: 2, pods: 1},
		{name: "not in the cluster", zone: "z9", reason: obv1.ReasonNotInCluster, message: "OBCluster ob has no zone z9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := zoneView(viewCluster(tc.change), tc.zone)
			if v.ready != tc.ready || v.reason != tc.reason || tc.message != "" && v.message != tc.message {
				t.Errorf("ready %v %s %q; want %v %s %q", v.ready, v.reason, v.message, tc.ready, tc.reason, tc.message)
			}
			if v.status.Status != tc.status || v.status.ActiveServers != tc.active || v.status.ReadyPods != tc.pods {
				t.Errorf("status %+v; want %q, %d active, %d ready pods", v.status, tc.status, tc.active, tc.pods)
			}
		})
	}
}

func TestServerView(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pod             string
		change          func(*obv1.OBCluster)
		ready           bool
		reason, message string
		status, address string
		rootService     bool
	}{
		{name: "serving", pod: "ob-z1-0", ready: true, reason: obv1.ReasonServerServing,
			message: "ACTIVE and serving since 2026-01-02T03:04:05Z", status: "ACTIVE", address: "10.0.0.1:2882", rootService: true},
		{name: "inactive", pod: "ob-z1-1", change: func(ob *obv1.OBCluster) {
			ob.Status.Servers[1].Status, ob.Status.Servers[1].StartServiceTime = "INACTIVE", nil
		}, reason: obv1.ReasonServerNotActive, message: "OceanBase reports the server INACTIVE", status: "INACTIVE", address: "10.0.0.2:2882"},
		{name: "not serving yet", pod: "ob-z2-0", change: func(ob *obv1.OBCluster) { ob.Status.Servers[2].StartServiceTime = nil },
			reason: obv1.ReasonServerNotServing, status: "ACTIVE", address: "10.0.0.3:2882"},
		{name: "pod not ready", pod: "ob-z2-0", change: func(ob *obv1.OBCluster) { ob.Status.Servers[2].PodReady = false },
			reason: obv1.ReasonPodNotReady, status: "ACTIVE", address: "10.0.0.3:2882"},
		{name: "unknown to OceanBase", pod: "ob-z2-0", change: func(ob *obv1.OBCluster) { ob.Status.Servers[2].Status = "" },
			reason: obv1.ReasonServerUnknown, message: "OceanBase does not know server 10.0.0.3:2882", address: "10.0.0.3:2882"},
		{name: "deleting", pod: "ob-z1-1", change: func(ob *obv1.OBCluster) { ob.Status.Servers[1].Status = "DELETING" },
			reason: obv1.ReasonServerNotActive, status: "DELETING", address: "10.0.0.2:2882"},
		{name: "no pod", pod: "ob-z1-7", reason: obv1.ReasonPodMissing, message: "OBCluster ob has no pod ob-z1-7"},
		{name: "not bootstrapped, no pod", pod: "ob-z1-7", change: func(ob *obv1.OBCluster) { ob.Status.BootstrappedAt = nil },
			reason: obv1.ReasonNotBootstrapped},
		{name: "not bootstrapped", pod: "ob-z1-0", change: func(ob *obv1.OBCluster) {
			ob.Status.BootstrappedAt, ob.Status.RootService = nil, ""
			ob.Status.Servers[0].Status, ob.Status.Servers[0].StartServiceTime = "", nil
		}, reason: obv1.ReasonNotBootstrapped, address: "10.0.0.1:2882"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := serverView(viewCluster(tc.change), tc.pod)
			if v.ready != tc.ready || v.reason != tc.reason || tc.message != "" && v.message != tc.message {
				t.Errorf("ready %v %s %q; want %v %s %q", v.ready, v.reason, v.message, tc.ready, tc.reason, tc.message)
			}
			if v.status.Status != tc.status || v.status.Address != tc.address || v.status.RootService != tc.rootService {
				t.Errorf("status %+v; want %q at %q, root service %v", v.status, tc.status, tc.address, tc.rootService)
			}
		})
	}
}
