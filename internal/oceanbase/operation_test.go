package oceanbase_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
	"github.com/stewardhq/steward/internal/testenv"
)

// operationDone waits for the OBTenantOperation name to succeed.
func operationDone(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	testenv.Eventually(t, "the operation "+name+" succeeded", func() (bool, string) {
		o := &obv1.OBTenantOperation{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return false, err.Error()
		}
		return framework.IsConditionTrue(o.Status.Conditions, framework.ConditionReady) && o.Status.CompletedAt != nil,
			fmt.Sprintf("%v %+v", o.Status.Conditions, o.Status.Operation)
	})
}

// roleIs waits for the OBTenant name's tenant to have role.
func roleIs(c client.Client, ns, name, role string) func() (bool, string) {
	return tenantReady(c, ns, name, func(tn *obv1.OBTenant) string {
		if tn.Status.TenantRole != role {
			return "role " + tn.Status.TenantRole
		}
		return ""
	})
}

// rowsAre waits for app.t to hold want through db.
func rowsAre(t *testing.T, db *sql.DB, want string) {
	t.Helper()
	eventually(t, "rows "+want, func() (bool, string) {
		got, err := rows(db)
		return err == nil && got == want, fmt.Sprint(got, err)
	})
}

// TestStandbyAndOperations: an OBTenant with spec.source.primary follows
// another (the primary's rows and users replayed, writes refused); a
// switchover swaps their roles with no committed row lost and the old
// primary then follows the new one; a password change is taken by
// OceanBase, then written into the OBTenant's Secret, the old password
// refused; a failover activates the standby. Admission refuses a failover
// of a primary, a switchover whose standby is not a standby of the
// primary, a password change of a standby or with no Secret, an upgrade
// of a standby, and a
// second operation on a tenant while one runs.
func TestStandbyAndOperations(t *testing.T) {
	c, ns, p := setup(t, 91)
	createTenant(t, c, ns, "p1")
	testenv.Eventually(t, "the primary is created", roleIs(c, ns, "t1", obv1.TenantRolePrimary))
	ob := get(t, c, ns, "ob")
	primary := login(t, c, p, ob, "root", "p1", "t1-root")
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2)"} {
		if _, err := primary.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	standbyTenant := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t2"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", TenantName: "s1", Zones: []obv1.OBTenantZone{{Name: "z1"}}, RootPassword: "t1-root",
		Unit:   obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
		Source: &obv1.OBTenantSource{Primary: &obv1.OBTenantPrimarySource{Tenant: "t1"}},
	}}
	tc := oceanbase.NewTenantController(oceanbase.Options{})
	self := standbyTenant.DeepCopy()
	self.Name, self.Spec.Source.Primary.Tenant = "t9", "t9"
	if err := tc.Admit(t.Context(), c, self); err == nil || !strings.Contains(err.Error(), "spec.source.primary.tenant") {
		t.Errorf("a tenant its own standby: %v", err)
	}
	if err := c.Create(t.Context(), standbyTenant); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the standby is created", roleIs(c, ns, "t2", obv1.TenantRoleStandby))
	standby := login(t, c, p, ob, "root", "s1", "t1-root") // the primary's users are the standby's
	rowsAre(t, standby, "1,2")
	if _, err := primary.Exec("INSERT INTO app.t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	rowsAre(t, standby, "1,2,3")
	if _, err := standby.Exec("INSERT INTO app.t VALUES (9)"); err == nil {
		t.Error("the standby took a write")
	}

	// Admission.
	oc := oceanbase.NewTenantOperationController(oceanbase.Options{})
	op := func(name, typ string, set func(*obv1.OBTenantOperationSpec)) *obv1.OBTenantOperation {
		o := &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: obv1.OBTenantOperationSpec{Type: typ}}
		set(&o.Spec)
		return o
	}
	admit := func(o *obv1.OBTenantOperation) error {
		if err := oc.Validate(o); err != nil {
			return err
		}
		if err := oc.Admit(t.Context(), c, o); err != nil {
			return err
		}
		return oc.Clashes(t.Context(), c, o)
	}
	switchover := op("sw", obv1.OperationSwitchover, func(s *obv1.OBTenantOperationSpec) {
		s.Switchover = &obv1.SwitchoverSpec{Primary: "t1", Standby: "t2"}
	})
	for _, bad := range []struct {
		name, field string
		o           *obv1.OBTenantOperation
	}{
		{"a failover of a primary", "spec.failover.standby", op("x", obv1.OperationFailover, func(s *obv1.OBTenantOperationSpec) {
			s.Failover = &obv1.FailoverSpec{Standby: "t1"}
		})},
		{"a switchover the wrong way round", "spec.switchover", op("x", obv1.OperationSwitchover, func(s *obv1.OBTenantOperationSpec) {
			s.Switchover = &obv1.SwitchoverSpec{Primary: "t2", Standby: "t1"}
		})},
		{"a password change of a standby", "spec.changePassword.tenant", op("x", obv1.OperationChangePassword, func(s *obv1.OBTenantOperationSpec) {
			s.ChangePassword = &obv1.ChangePasswordSpec{Tenant: "t2", Secret: "t1-root"}
		})},
		{"a password change with no Secret", "spec.changePassword.secret", op("x", obv1.OperationChangePassword, func(s *obv1.OBTenantOperationSpec) {
			s.ChangePassword = &obv1.ChangePasswordSpec{Tenant: "t1", Secret: "nope"}
		})},
		{"a replay of a primary", "spec.replayLog.tenant", op("x", obv1.OperationReplayLog, func(s *obv1.OBTenantOperationSpec) {
			s.ReplayLog = &obv1.ReplayLogSpec{Tenant: "t1"}
		})},
		{"an upgrade of a standby", "spec.upgrade.tenant", op("x", obv1.OperationUpgrade, func(s *obv1.OBTenantOperationSpec) {
			s.Upgrade = &obv1.UpgradeTenantSpec{Tenant: "t2"}
		})},
	} {
		if err := admit(bad.o); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("%s: %v", bad.name, err)
		}
	}
	if err := admit(switchover); err != nil {
		t.Fatalf("a valid switchover: %v", err)
	}

	// Switchover.
	if err := c.Create(t.Context(), switchover); err != nil {
		t.Fatal(err)
	}
	second := op("fo", obv1.OperationFailover, func(s *obv1.OBTenantOperationSpec) { s.Failover = &obv1.FailoverSpec{Standby: "t2"} })
	if err := oc.Clashes(t.Context(), c, second); err == nil || !strings.Contains(err.Error(), "one operation at a time") {
		t.Errorf("a second operation on t2 while the switchover runs: %v", err)
	}
	operationDone(t, c, ns, "sw")
	testenv.Eventually(t, "t2 is the primary", roleIs(c, ns, "t2", obv1.TenantRolePrimary))
	testenv.Eventually(t, "t1 is a standby", roleIs(c, ns, "t1", obv1.TenantRoleStandby))
	rowsAre(t, standby, "1,2,3") // no committed row lost
	if _, err := standby.Exec("INSERT INTO app.t VALUES (4)"); err != nil {
		t.Fatalf("the new primary refused a write: %v", err)
	}
	rowsAre(t, primary, "1,2,3,4") // the old primary follows the new one
	if _, err := primary.Exec("INSERT INTO app.t VALUES (9)"); err == nil {
		t.Error("the old primary took a write after the switchover")
	}

	// Password change of the new primary (its OBTenant's Secret is t1-root).
	if err := c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "new-root"},
		StringData: map[string]string{"password": "N3w-pass"}}); err != nil {
		t.Fatal(err)
	}
	oldPW := secretPassword(t, c, ns, "t1-root")
	if err := c.Create(t.Context(), op("pw", obv1.OperationChangePassword, func(s *obv1.OBTenantOperationSpec) {
		s.ChangePassword = &obv1.ChangePasswordSpec{Tenant: "t2", Secret: "new-root"}
	})); err != nil {
		t.Fatal(err)
	}
	operationDone(t, c, ns, "pw")
	if got := secretPassword(t, c, ns, "t1-root"); got != "N3w-pass" {
		t.Errorf("the OBTenant's Secret holds %q after the change", got)
	}
	login(t, c, p, ob, "root", "s1", "t1-root")
	if db, err := loginWith(p, ob, "root", "s1", oldPW); err == nil {
		db.Close()
		t.Error("the old root password still logs in")
	}

	// Failover: the standby (the old primary) becomes a primary at once.
	if err := c.Create(t.Context(), op("fo", obv1.OperationFailover, func(s *obv1.OBTenantOperationSpec) {
		s.Failover = &obv1.FailoverSpec{Standby: "t1"}
	})); err != nil {
		t.Fatal(err)
	}
	operationDone(t, c, ns, "fo")
	testenv.Eventually(t, "t1 is a primary again", roleIs(c, ns, "t1", obv1.TenantRolePrimary))
	if _, err := primary.Exec("INSERT INTO app.t VALUES (5)"); err != nil {
		t.Errorf("the activated tenant refused a write: %v", err)
	}
	if n := p.statements("SWITCHOVER TO PRIMARY"); n != 1 {
		t.Errorf("%d SWITCHOVER TO PRIMARY statements, want 1", n)
	}
}

// secretPassword returns the Secret's password.
func secretPassword(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data["password"])
}

// TestTenantUpgrade: an Upgrade of a tenant at its observers' version
// succeeds without running OceanBase's upgrade job. After the cluster's
// image moves to a new version the tenant keeps its data version (Steward
// runs no upgrade script) until an Upgrade runs the job, which raises it to
// the observers' version, with an Event.
func TestTenantUpgrade(t *testing.T) {
	c, ns, p := setup(t, 95)
	createTenant(t, c, ns, "u1")
	testenv.Eventually(t, "the tenant is created", roleIs(c, ns, "t1", obv1.TenantRolePrimary))
	sys := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	t1 := &obv1.OBTenant{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t1"}, t1); err != nil {
		t.Fatal(err)
	}
	dataVersion := func() string {
		t.Helper()
		v, err := obsql.TenantDataVersion(t.Context(), sys, t1.Status.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	upgrade := func(name string) *obv1.OBTenantOperation {
		t.Helper()
		o := &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: obv1.OBTenantOperationSpec{
			Type: obv1.OperationUpgrade, Upgrade: &obv1.UpgradeTenantSpec{Tenant: "t1"}}}
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		operationDone(t, c, ns, name)
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		return o
	}

	if v := dataVersion(); v != "4.3.5.1" {
		t.Fatalf("a new tenant's data version %s, want its observers' 4.3.5.1", v)
	}
	if o := upgrade("same"); o.Status.Operation.Message != "already at the observers' version 4.3.5.1" {
		t.Errorf("an upgrade to the version the tenant has: %q", o.Status.Operation.Message)
	}
	if n := p.statements("RUN UPGRADE JOB"); n != 0 {
		t.Errorf("%d upgrade jobs run for a tenant at its observers' version", n)
	}

	testenv.Update(t, c, get(t, c, ns, "ob"), func(ob *obv1.OBCluster) { ob.Spec.Image = "localhost/obsim:1.1" })
	eventually(t, "the cluster's upgrade ends", upgradedTo(t, c, ns, "localhost/obsim:1.1", 1))
	sys = login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator") // the observer is a new one
	if v := dataVersion(); v != "4.3.5.1" {
		t.Fatalf("the tenant's data version %s after the image upgrade, want 4.3.5.1 until its upgrade", v)
	}
	if o := upgrade("up"); o.Status.Operation.Message != "upgraded to 4.3.5.2" {
		t.Errorf("the upgrade's message: %q", o.Status.Operation.Message)
	}
	if v := dataVersion(); v != "4.3.5.2" {
		t.Errorf("the tenant's data version %s after its upgrade, want 4.3.5.2", v)
	}
	if n := p.statements(`RUN UPGRADE JOB "UPGRADE_ALL" TENANT = u1`); n != 1 {
		t.Errorf("%d upgrade jobs run, want 1", n)
	}
	testenv.Eventually(t, "a TenantUpgraded Event", func() (bool, string) {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == obv1.EventTenantUpgraded && e.Regarding.Name == "up" {
				return true, e.Note
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
}
