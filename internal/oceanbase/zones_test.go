package oceanbase_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/metrics"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestZoneChangeAdmission updates the zones of stored OBClusters (no
// controller runs): the API server's rules admit adding zones, removing
// one, or removing several while a majority stays, and reject an edit
// that adds and removes zones at once, one that keeps no majority, and
// one that keeps no zone, each naming spec.zones.
func TestZoneChangeAdmission(t *testing.T) {
	c, err := client.New(server.Config(t), client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "ob-admission-")
	zones := func(names ...string) []obv1.OBZoneSpec {
		out := make([]obv1.OBZoneSpec, len(names))
		for i, n := range names {
			out[i] = obv1.OBZoneSpec{Name: n, Replicas: 1}
		}
		return out
	}
	for i, tc := range []struct {
		name     string
		old, new []obv1.OBZoneSpec
		reject   string // part of the message; "" admits
	}{
		{"add one", zones("z1", "z2", "z3"), zones("z1", "z2", "z3", "z4"), ""},
		{"add two", zones("z1", "z2", "z3"), zones("z1", "z2", "z3", "z4", "z5"), ""},
		{"add to one zone", zones("z1"), zones("z1", "z2"), ""},
		{"remove one of three", zones("z1", "z2", "z3"), zones("z1", "z3"), ""},
		{"remove one of two", zones("z1", "z2"), zones("z2"), ""},
		{"remove two of five", zones("z1", "z2", "z3", "z4", "z5"), zones("z1", "z2", "z3"), ""},
		{"reorder", zones("z1", "z2", "z3"), zones("z3", "z1", "z2"), ""},
		{"replicas only", zones("z1", "z2", "z3"), []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2", Replicas: 1}, {Name: "z3", Replicas: 1}}, ""},
		{"remove two of three", zones("z1", "z2", "z3"), zones("z1"), "must keep a majority"},
		{"remove two of four", zones("z1", "z2", "z3", "z4"), zones("z1", "z2"), "must keep a majority"},
		{"add and remove", zones("z1", "z2", "z3"), zones("z1", "z2", "z4"), "add zones or remove zones, not both"},
		{"rename the only zone", zones("z1"), zones("z2"), "at least one of the current zones must stay"},
		{"remove every zone", zones("z1", "z2"), nil, "spec.zones"},
		{"duplicate names", zones("z1", "z2"), zones("z1", "z2", "z2"), "spec.zones"},
		{"invalid name", zones("z1"), zones("z1", "Z_2"), "spec.zones[1].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ob%d", i)},
				Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: tc.old}}
			if err := c.Create(t.Context(), ob); err != nil {
				t.Fatal(err)
			}
			ob.Spec.Zones = tc.new
			err := c.Update(t.Context(), ob)
			switch {
			case tc.reject == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.reject == "":
				return
			case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.reject):
				t.Fatalf("got %v; want an Invalid error saying %q", err, tc.reject)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Details == nil {
				t.Fatalf("no details in %v", err)
			}
			named := false
			for _, cause := range status.Status().Details.Causes {
				switch {
				case strings.HasPrefix(cause.Field, "spec.zones"):
					named = true
				case cause.Field != "" && cause.Field != "<nil>": // the API server's note on rules left unchecked
					t.Errorf("cause %+v names another field", cause)
				}
			}
			if !named {
				t.Errorf("no cause names spec.zones: %+v", status.Status().Details.Causes)
			}
		})
	}
}

func queryString(db *sql.DB, q string) string {
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		return "error: " + err.Error()
	}
	return s.String
}

func countRows(db *sql.DB, q string) int {
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		return -1
	}
	return n
}

func operationIs(ob *obv1.OBCluster, name, phase string) string {
	if op := ob.Status.Operation; op == nil || op.Name != name || string(op.Phase) != phase {
		return fmt.Sprintf("operation %+v", op)
	}
	return ""
}

// TestAddAndRemoveZone adds a fourth zone to a three-zone cluster
// (OceanBase lists it ACTIVE with its server, and the sys tenant has a
// replica there), puts a tenant there, and removes the zone again: the
// removal holds, saying so and changing nothing (the sys tenant keeps its
// replica in the zone), while the tenant has the zone (across a manager
// restart; the zone's views stay, Ready names the hold on every pass); a
// removal canceled by adding the zone back ends there (no ZonesRemoved,
// no steps counted); removed again, it continues once the tenant leaves
// it; OceanBase lets the
// zone's server go before its pod goes, and the zone, its StatefulSet, its
// Services and its volume claim go.
func TestAddAndRemoveZone(t *testing.T) {
	c, ns, p := setup(t, 74)
	restart := func() { p.stopManager(); p.startManager() }
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) {
		ob.Spec.Zones = append(ob.Spec.Zones, obv1.OBZoneSpec{Name: "z4", Replicas: 1})
	})
	op := login(t, c, p, ob, "operator", "", "ob-operator")
	eventually(t, "zone z4 joins", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 4)(); !ok {
			return false, why
		}
		if why := operationIs(get(t, c, ns, "ob"), "add-zone", "Succeeded"); why != "" {
			return false, why
		}
		zone := queryString(op, "SELECT STATUS FROM oceanbase.DBA_OB_ZONES WHERE ZONE = 'z4'")
		server := queryString(op, "SELECT STATUS FROM oceanbase.DBA_OB_SERVERS WHERE ZONE = 'z4'")
		locality := queryString(op, "SELECT LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'sys'")
		pool := queryString(op, "SELECT ZONE_LIST FROM oceanbase.DBA_OB_RESOURCE_POOLS WHERE TENANT_ID = 1")
		if zone != "ACTIVE" || server != "ACTIVE" || locality != "FULL{1}@z1, FULL{1}@z2, FULL{1}@z3, FULL{1}@z4" ||
			pool != "z1;z2;z3;z4" {
			return false, fmt.Sprintf("zone z4 %s, its server %s, sys locality %q, sys pool %q", zone, server, locality, pool)
		}
		return true, ""
	})
	// Zone z4's observer's volume claim, which the player made as a
	// StatefulSet controller does.
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "store-" + build.PodName(ob, "z4", 0)}, claim); err != nil {
		t.Fatal(err)
	}

	tn := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}, {Name: "z2"}, {Name: "z4"}},
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
	}}
	if err := c.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tenant has a replica in z4", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.Locality != "FULL{1}@z1, FULL{1}@z2, FULL{1}@z4" {
			return "locality " + tn.Status.Locality
		}
		return ""
	}))

	// Watch zone z4's pod and OceanBase's servers in z4: the pod must not
	// be gone while OceanBase still lists a server there. The pod is read
	// first: a server listed after the pod was seen gone was listed then.
	watch := login(t, c, p, ob, "operator", "", "ob-operator")
	var violations, podGone atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ob-z4-0"}, &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				podGone.Store(1)
				if n := countRows(watch, "SELECT count(*) FROM oceanbase.DBA_OB_SERVERS WHERE ZONE = 'z4'"); n > 0 {
					violations.Add(1)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-watched }()

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones = ob.Spec.Zones[:3] })
	eventually(t, "the removal holds for the tenant", func() (bool, string) {
		o := get(t, c, ns, "ob")
		r := meta.FindStatusCondition(o.Status.Conditions, framework.ConditionReady)
		if o.Status.Operation == nil || o.Status.Operation.Name != "remove-zone" || o.Status.Operation.Step != "wait-tenants-leave" ||
			!strings.Contains(o.Status.Operation.Message, "tenant t1") || r == nil || r.Reason != obv1.ReasonZoneRemovalHeld {
			return false, fmt.Sprintf("operation %+v, ready %+v", o.Status.Operation, r)
		}
		return true, ""
	})
	// While held, zone z4's views stay, saying what OceanBase reports of
	// it: its server still serves.
	eventually(t, "the leaving zone's views say it is leaving", func() (bool, string) {
		zones, servers := views(t, c, ns)
		z, s := zones["ob-z4"], servers["ob-z4-0"]
		zr := condition(z.Status.Conditions, framework.ConditionReady)
		if zr.Reason != obv1.ReasonZoneRemoving || z.Status.Status != "ACTIVE" || z.Status.ActiveServers != 1 {
			return false, fmt.Sprintf("OBZone ob-z4: %+v", z.Status)
		}
		sr := condition(s.Status.Conditions, framework.ConditionReady)
		return s.Status.Status == "ACTIVE" && sr.Status == metav1.ConditionTrue, fmt.Sprintf("OBServer ob-z4-0: %+v", s.Status)
	})
	// A new manager reads the hold again from OceanBase; the removal stays
	// held, touching nothing, and Ready says so on every pass.
	restart()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		o := get(t, c, ns, "ob")
		if r := meta.FindStatusCondition(o.Status.Conditions, framework.ConditionReady); r == nil || r.Reason != obv1.ReasonZoneRemovalHeld {
			t.Fatalf("while held, Ready is %+v", r)
		}
	}
	o := get(t, c, ns, "ob")
	if o.Status.Operation.Phase != "Running" || o.Status.Operation.Step != "wait-tenants-leave" {
		t.Fatalf("the held removal: %+v", o.Status.Operation)
	}
	if s := queryString(op, "SELECT STATUS FROM oceanbase.DBA_OB_SERVERS WHERE ZONE = 'z4'"); s != "ACTIVE" {
		t.Fatalf("while held, the server of z4 is %q", s)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ob-z4-0"}, &corev1.Pod{}); err != nil {
		t.Fatalf("while held, the pod of z4: %v", err)
	}
	// Nor has the sys tenant lost its replica in z4 for a removal that
	// cannot go on.
	if s := queryString(op, "SELECT LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'sys'"); s != "FULL{1}@z1, FULL{1}@z2, FULL{1}@z3, FULL{1}@z4" {
		t.Fatalf("while held, the sys tenant's locality is %q", s)
	}
	if s := queryString(op, "SELECT ZONE_LIST FROM oceanbase.DBA_OB_RESOURCE_POOLS WHERE TENANT_ID = 1"); s != "z1;z2;z3;z4" {
		t.Fatalf("while held, the sys tenant's pool is in zones %q", s)
	}

	// The removal canceled: z4 is in the spec again. The flow ends there,
	// its remaining steps not run (nor counted), no ZonesRemoved recorded.
	removeZoneSteps := func() float64 {
		n := 0.0
		for _, step := range []string{"wait-tenants-leave", "shrink-sys-tenant", "stop-zones", "delete-zone-servers", "delete-zones", "delete-zone-statefulsets"} {
			var m dto.Metric
			if err := metrics.ActionsTotal.WithLabelValues("OBCluster", "remove-zone/"+step).Write(&m); err != nil {
				t.Fatal(err)
			}
			n += m.GetCounter().GetValue()
		}
		return n
	}
	stepsBefore := removeZoneSteps()
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) {
		ob.Spec.Zones = append(ob.Spec.Zones, obv1.OBZoneSpec{Name: "z4", Replicas: 1})
	})
	eventually(t, "the canceled removal ends and the cluster serves", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 4)(); !ok {
			return false, why
		}
		return operationIs(get(t, c, ns, "ob"), "remove-zone", "Aborted") == "", fmt.Sprint(get(t, c, ns, "ob").Status.Operation)
	})
	if n := removeZoneSteps() - stepsBefore; n != 0 {
		t.Errorf("the canceled removal counted %v steps in steward_actions_total", n)
	}
	var events eventsv1.EventList
	if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "ZonesRemoved" {
			t.Errorf("the canceled removal recorded %s: %s", e.Reason, e.Note)
		}
	}
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones = ob.Spec.Zones[:3] })
	eventually(t, "the removal holds again", func() (bool, string) {
		o := get(t, c, ns, "ob")
		r := meta.FindStatusCondition(o.Status.Conditions, framework.ConditionReady)
		return operationIs(o, "remove-zone", "Running") == "" && r != nil && r.Reason == obv1.ReasonZoneRemovalHeld,
			fmt.Sprintf("operation %+v, ready %+v", o.Status.Operation, r)
	})

	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) { tn.Spec.Zones = tn.Spec.Zones[:2] })
	eventually(t, "zone z4 is removed", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 3)(); !ok {
			return false, why
		}
		if why := operationIs(get(t, c, ns, "ob"), "remove-zone", "Succeeded"); why != "" {
			return false, why
		}
		zones := countRows(op, "SELECT count(*) FROM oceanbase.DBA_OB_ZONES WHERE ZONE = 'z4'")
		servers := countRows(op, "SELECT count(*) FROM oceanbase.DBA_OB_SERVERS WHERE ZONE = 'z4'")
		if zones != 0 || servers != 0 {
			return false, fmt.Sprintf("OceanBase lists %d zones z4, %d servers there", zones, servers)
		}
		return true, ""
	})
	cancel()
	<-watched
	if violations.Load() > 0 || podGone.Load() == 0 {
		t.Errorf("the pod of z4 was seen gone %v, %d times while OceanBase still listed its server", podGone.Load() == 1, violations.Load())
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ob-z4"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the StatefulSet of z4: %v", err)
	}
	eventually(t, "the Service of z4's server goes", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ob-z4-0"}, &corev1.Service{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	// Without a controller to drop its protection finalizer, a deleted
	// claim stays, being deleted.
	err := c.Get(t.Context(), client.ObjectKeyFromObject(claim), claim)
	if !apierrors.IsNotFound(err) && (err != nil || claim.DeletionTimestamp == nil) {
		t.Errorf("the volume claim of z4's observer: %v, deletion %v", err, claim.DeletionTimestamp)
	}
	if s := queryString(op, "SELECT LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'sys'"); s != "FULL{1}@z1, FULL{1}@z2, FULL{1}@z3" {
		t.Errorf("the sys tenant's locality is %q", s)
	}
}

// TestRemoveTheRootServiceZone removes zone z1, where the cluster was
// bootstrapped and the RootService runs: the RootService moves with the
// sys tenant's locality, the controller's login moves to the zones that
// stay, and the zone goes.
func TestRemoveTheRootServiceZone(t *testing.T) {
	c, ns, p := setup(t, 75)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))
	ob = get(t, c, ns, "ob")
	rs := ob.Status.RootService
	if rs != ob.Status.Servers[0].Address || ob.Status.Servers[0].Zone != "z1" {
		t.Fatalf("the RootService %s is not z1's server: %+v", rs, ob.Status.Servers)
	}
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones = ob.Spec.Zones[1:] })
	eventually(t, "zone z1 is removed", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 2)(); !ok {
			return false, why
		}
		o := get(t, c, ns, "ob")
		if why := operationIs(o, "remove-zone", "Succeeded"); why != "" {
			return false, why
		}
		if o.Status.RootService == "" || o.Status.RootService == rs {
			return false, "RootService " + o.Status.RootService
		}
		return true, ""
	})
	o := get(t, c, ns, "ob")
	db := login(t, c, p, o, "operator", "", "ob-operator")
	if n := countRows(db, "SELECT count(*) FROM oceanbase.DBA_OB_ZONES WHERE ZONE = 'z1'"); n != 0 {
		t.Errorf("OceanBase lists zone z1 %d times", n)
	}
	if s := queryString(db, "SELECT LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'sys'"); s != "FULL{1}@z2, FULL{1}@z3" {
		t.Errorf("the sys tenant's locality is %q", s)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ob-z1"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the StatefulSet of z1: %v", err)
	}
}
