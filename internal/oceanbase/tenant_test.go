package oceanbase_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
	"github.com/stewardhq/steward/internal/testenv"
)

func tenantReady(c client.Client, ns, name string, check func(*obv1.OBTenant) string) func() (bool, string) {
	return func() (bool, string) {
		t := &obv1.OBTenant{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, t); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(t.Status.Conditions, framework.ConditionReady)
		running := t.Status.Operation != nil && t.Status.Operation.Phase.Active()
		if r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != t.Generation || running {
			return false, fmt.Sprintf("ready %v, operation %v", r, t.Status.Operation)
		}
		if why := check(t); why != "" {
			return false, why
		}
		return true, ""
	}
}

// login logs in to cluster ob as user (user@tenant) through its first
// server, with the password in Secret secret.
func login(t *testing.T, c client.Client, p *player, ob *obv1.OBCluster, user, tenant, secret string) *sql.DB {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ob.Namespace, Name: secret}, s); err != nil {
		t.Fatal(err)
	}
	db, err := loginWith(p, ob, user, tenant, string(s.Data["password"]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// loginWith logs in to cluster ob as user@tenant through its first
// server, with password.
func loginWith(p *player, ob *obv1.OBCluster, user, tenant, password string) (*sql.DB, error) {
	ip, _, err := net.SplitHostPort(ob.Status.Servers[0].Address)
	if err != nil {
		return nil, err
	}
	return obsql.Open(context.Background(), p.resolve(ip), obsql.Login{User: user, Tenant: tenant, Password: password}, 5*time.Second)
}

// TestTenantLifecycle creates a tenant in two zones of a three-zone
// cluster; then adds the third zone, doubles its units and grows its unit
// config; removes the first zone (its pool goes); and deletes it with the
// Delete policy (the tenant, its pools and its unit config go). Admission
// rejects a tenant of a missing cluster, of a zone the cluster does not
// have, and with more units than a zone has servers.
func TestTenantLifecycle(t *testing.T) {
	c, ns, p := setup(t, 72)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2", Replicas: 2}, {Name: "z3", Replicas: 2}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	tn := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}, {Name: "z2"}},
		Unit:          obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
		ReclaimPolicy: commonv1.ReclaimDelete,
	}}
	admit := func(tn *obv1.OBTenant) error {
		tn = tn.DeepCopy()
		obv1.DefaultTenant(tn)
		return oceanbase.NewTenantController(oceanbase.Options{}).Admit(t.Context(), c, tn)
	}
	missing := tn.DeepCopy()
	missing.Spec.Cluster = "nope"
	if err := admit(missing); err == nil || !strings.Contains(err.Error(), "spec.cluster") {
		t.Fatalf("a tenant of a missing cluster: %v", err)
	}
	if err := admit(tn); err != nil {
		t.Fatalf("a valid tenant: %v", err)
	}
	bad := tn.DeepCopy()
	bad.Spec.Zones = append(bad.Spec.Zones, obv1.OBTenantZone{Name: "z9"})
	bad.Spec.UnitNum = 3
	if err := admit(bad); err == nil || !strings.Contains(err.Error(), "spec.zones[2].name") || !strings.Contains(err.Error(), "spec.unitNum") {
		t.Fatalf("a tenant of a missing zone and too many units: %v", err)
	}

	if err := c.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cluster serves", readyWith(c, ns, "ob", 6))
	testenv.Eventually(t, "the tenant is created", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.Locality != "FULL{1}@z1, FULL{1}@z2" || len(tn.Status.Pools) != 2 {
			return fmt.Sprintf("locality %q, pools %v", tn.Status.Locality, tn.Status.Pools)
		}
		return ""
	}))
	ob = get(t, c, ns, "ob")
	root := login(t, c, p, ob, "root", "t1", "t1-root") // the tenant's root has its Secret's password
	if err := root.Ping(); err != nil {
		t.Fatal(err)
	}

	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) {
		tn.Spec.Zones = append(tn.Spec.Zones, obv1.OBTenantZone{Name: "z3"})
		tn.Spec.UnitNum = 2
		tn.Spec.Unit.MemorySize = resource.MustParse("8Gi")
	})
	op := login(t, c, p, ob, "operator", "", "ob-operator")
	testenv.Eventually(t, "the tenant has three zones, two units each, of 8Gi", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.Locality != "FULL{1}@z1, FULL{1}@z2, FULL{1}@z3" || len(tn.Status.Pools) != 3 {
			return fmt.Sprintf("locality %q, pools %v", tn.Status.Locality, tn.Status.Pools)
		}
		for _, pool := range tn.Status.Pools {
			if pool.UnitNum != 2 || pool.ActiveUnits != 2 {
				return fmt.Sprintf("pool %+v", pool)
			}
		}
		var memory int64
		if err := op.QueryRow("SELECT MEMORY_SIZE FROM oceanbase.DBA_OB_UNIT_CONFIGS WHERE NAME = 't1_unit'").Scan(&memory); err != nil || memory != 8<<30 {
			return fmt.Sprintf("unit config memory %d (%v)", memory, err)
		}
		return ""
	}))

	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) { tn.Spec.Zones = tn.Spec.Zones[1:] })
	testenv.Eventually(t, "zone z1 leaves the tenant and its pool is dropped", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.Locality != "FULL{1}@z2, FULL{1}@z3" || len(tn.Status.Pools) != 2 {
			return fmt.Sprintf("locality %q, pools %v", tn.Status.Locality, tn.Status.Pools)
		}
		var n int
		if err := op.QueryRow("SELECT count(*) FROM oceanbase.DBA_OB_RESOURCE_POOLS WHERE NAME = 't1_pool_z1'").Scan(&n); err != nil || n != 0 {
			return fmt.Sprintf("pool t1_pool_z1: %d (%v)", n, err)
		}
		return ""
	}))

	if err := c.Delete(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the OBTenant is gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(tn), &obv1.OBTenant{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	var tenants, pools, units int
	for q, n := range map[string]*int{
		"SELECT count(*) FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 't1'":           &tenants,
		"SELECT count(*) FROM oceanbase.DBA_OB_RESOURCE_POOLS WHERE NAME LIKE 't1_pool_%'": &pools,
		"SELECT count(*) FROM oceanbase.DBA_OB_UNIT_CONFIGS WHERE NAME = 't1_unit'":        &units,
	} {
		if err := op.QueryRow(q).Scan(n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if tenants+pools+units != 0 {
		t.Fatalf("after the deletion: %d tenants, %d pools, %d unit configs", tenants, pools, units)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t1-root"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the generated root Secret after the deletion: %v", err)
	}
}

// TestTenantFixedAfterRefusal creates a tenant whose unit memory is below
// OceanBase's minimum (__min_full_resource_pool_memory, 5 GiB): OceanBase
// refuses CREATE TENANT and the create step fails, its failed attempts
// adding up across the runs that send it again; once the spec asks for
// enough memory, the unit config made from the first spec is altered and
// the tenant created (ob-operator #177, where IF NOT EXISTS kept the small
// unit for ever). Its zones are listed in another order than OceanBase
// writes its locality, which is the same set of zones: no drift.
func TestTenantFixedAfterRefusal(t *testing.T) {
	c, ns, _ := setup(t, 76)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	tn := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z3"}, {Name: "z1"}, {Name: "z2"}},
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("1Gi")},
	}}
	if err := c.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	// Each run after a refusal sends CREATE TENANT again and polls it: the
	// refusals add up towards the flow's limit instead of the poll between
	// them forgetting each.
	eventually(t, "OceanBase refuses the tenant three times", func() (bool, string) {
		got := &obv1.OBTenant{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(tn), got); err != nil {
			return false, err.Error()
		}
		op := got.Status.Operation
		if op == nil || op.Name != "create" || op.Step != "create-tenant" || op.Attempts < 3 ||
			!strings.Contains(op.LastError, "__min_full_resource_pool_memory") {
			return false, fmt.Sprintf("operation %+v", op)
		}
		return true, ""
	})
	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) { tn.Spec.Unit.MemorySize = resource.MustParse("6Gi") })
	eventually(t, "the tenant is created with the spec's memory", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.TenantStatus != "NORMAL" || tn.Status.Operation.Phase != commonv1.PhaseSucceeded {
			return fmt.Sprintf("tenant %s, operation %+v", tn.Status.TenantStatus, tn.Status.Operation)
		}
		return ""
	}))
	time.Sleep(2 * time.Second) // passes, one a second: none finds drift in the zones' order
	got := &obv1.OBTenant{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(tn), got); err != nil {
		t.Fatal(err)
	}
	if r := meta.FindStatusCondition(got.Status.Conditions, framework.ConditionReady); r == nil || r.Status != metav1.ConditionTrue ||
		got.Status.Operation.Name != "create" {
		t.Fatalf("after the create: Ready %+v, operation %+v", r, got.Status.Operation)
	}
}

// TestTenantVariables: a tenant's variables are set as the spec says (a
// number as a number, a string as a string), set back when changed
// through SQL, and changed with the spec; the allowlist's variable is
// refused in the list (it is connectWhiteList).
func TestTenantVariables(t *testing.T) {
	c, ns, p := setup(t, 94)
	createTenant(t, c, ns, "orders")
	testenv.Eventually(t, "the tenant is created", tenantReady(c, ns, "t1", func(*obv1.OBTenant) string { return "" }))
	tn := &obv1.OBTenant{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t1"}, tn); err != nil {
		t.Fatal(err)
	}
	bad := tn.DeepCopy()
	bad.Spec.Variables = []obv1.TenantVariable{{Name: "ob_tcp_invited_nodes", Value: "%"}}
	if err := c.Update(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "spec.connectWhiteList") {
		t.Errorf("ob_tcp_invited_nodes among the variables: %v", err)
	}
	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) {
		tn.Spec.Variables = []obv1.TenantVariable{{Name: "ob_query_timeout", Value: "20000000"}, {Name: "time_zone", Value: "+08:00"}}
	})
	op := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	variables := func() map[string]string {
		rows, err := op.Query("SELECT NAME, VALUE FROM oceanbase.CDB_OB_SYS_VARIABLES WHERE TENANT_ID = ?", tn.Status.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var n, v string
			if err := rows.Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			out[n] = v
		}
		return out
	}
	hold := func(what, timeout, zone string) {
		t.Helper()
		testenv.Eventually(t, what, tenantReady(c, ns, "t1", func(*obv1.OBTenant) string {
			if v := variables(); v["ob_query_timeout"] != timeout || v["time_zone"] != zone {
				return fmt.Sprintf("variables %v", v)
			}
			return ""
		}))
	}
	hold("the variables are set", "20000000", "+08:00")
	if _, err := op.Exec("ALTER TENANT orders SET VARIABLES ob_query_timeout = 5"); err != nil {
		t.Fatal(err)
	}
	hold("the variable changed through SQL is set back", "20000000", "+08:00")
	testenv.Update(t, c, tn, func(tn *obv1.OBTenant) { tn.Spec.Variables[1].Value = "+00:00" })
	hold("the changed value is set", "20000000", "+00:00")
	if n := p.statements("SET VARIABLES ob_query_timeout = 20000000"); n < 2 {
		t.Errorf("%d statements set ob_query_timeout as a number, want 2 (set, set back)", n)
	}
}
