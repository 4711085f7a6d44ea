package oceanbase_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/testenv"
)

// condition returns conds' condition t, or an empty one.
func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// views returns the cluster's OBZones and OBServers by name.
func views(t *testing.T, c client.Client, ns string) (map[string]obv1.OBZone, map[string]obv1.OBServer) {
	t.Helper()
	var zl obv1.OBZoneList
	var sl obv1.OBServerList
	if err := c.List(t.Context(), &zl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(t.Context(), &sl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	zones, servers := map[string]obv1.OBZone{}, map[string]obv1.OBServer{}
	for _, z := range zl.Items {
		zones[z.Name] = z
	}
	for _, s := range sl.Items {
		servers[s.Name] = s
	}
	return zones, servers
}

// TestViews bootstraps a three-zone cluster: an OBZone per zone and an
// OBServer per observer appear, owned by the cluster, and report Ready
// from the cluster's status; an idle cluster and its views make no
// writes; an observer that stops makes its OBServer and OBZone not Ready,
// with OceanBase's status, until it runs again; a view deleted by hand
// comes back.
func TestViews(t *testing.T) {
	c, ns, p := setup(t, 117)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))
	ob = get(t, c, ns, "ob")
	allReady := func() (bool, string) {
		zones, servers := views(t, c, ns)
		if names := slices.Sorted(maps.Keys(zones)); !slices.Equal(names, []string{"ob-z1", "ob-z2", "ob-z3"}) {
			return false, fmt.Sprintf("OBZones %v", names)
		}
		if names := slices.Sorted(maps.Keys(servers)); !slices.Equal(names, []string{"ob-z1-0", "ob-z2-0", "ob-z3-0"}) {
			return false, fmt.Sprintf("OBServers %v", names)
		}
		for _, z := range zones {
			if r := condition(z.Status.Conditions, framework.ConditionReady); r.Status != metav1.ConditionTrue ||
				z.Status.Status != "ACTIVE" || z.Status.ActiveServers != 1 || z.Status.Replicas != 1 {
				return false, fmt.Sprintf("OBZone %s: %+v", z.Name, z.Status)
			}
		}
		roots := 0
		for _, s := range servers {
			if r := condition(s.Status.Conditions, framework.ConditionReady); r.Status != metav1.ConditionTrue ||
				s.Status.Status != "ACTIVE" || s.Status.Address == "" || s.Status.Image != "localhost/obsim:1.0" ||
				s.Status.StartServiceTime == nil || s.Status.BuildVersion == "" || !s.Status.PodReady {
				return false, fmt.Sprintf("OBServer %s: %+v", s.Name, s.Status)
			}
			if s.Status.RootService {
				roots++
			}
		}
		return roots == 1, fmt.Sprintf("%d root services", roots)
	}
	testenv.Eventually(t, "three Ready OBZones and OBServers", allReady)
	zones, servers := views(t, c, ns)
	for _, o := range []client.Object{new(zones["ob-z1"]), new(servers["ob-z2-0"])} {
		if !metav1.IsControlledBy(o, ob) {
			t.Errorf("%s is not controlled by the cluster: %v", o.GetName(), o.GetOwnerReferences())
		}
	}

	// Idle: neither the cluster nor its views change (Resync is 1 s here).
	versions := func() map[string]string {
		zones, servers := views(t, c, ns)
		out := map[string]string{"cluster": get(t, c, ns, "ob").ResourceVersion}
		for n, z := range zones {
			out[n] = z.ResourceVersion
		}
		for n, s := range servers {
			out[n] = s.ResourceVersion
		}
		return out
	}
	before := versions()
	time.Sleep(4 * time.Second)
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("an idle cluster wrote: before %v, after %v", before, after)
	}

	p.stop("ob-z2-0") // the observer dies; its pod stays
	testenv.Eventually(t, "the stopped observer's OBServer and OBZone are not Ready", func() (bool, string) {
		zones, servers := views(t, c, ns)
		s, z := servers["ob-z2-0"], zones["ob-z2"]
		sr, zr := condition(s.Status.Conditions, framework.ConditionReady), condition(z.Status.Conditions, framework.ConditionReady)
		if sr.Status != metav1.ConditionFalse || sr.Reason != obv1.ReasonServerNotActive || s.Status.Status != "INACTIVE" {
			return false, fmt.Sprintf("OBServer: %+v", s.Status)
		}
		if zr.Status != metav1.ConditionFalse || zr.Reason != obv1.ReasonServersNotServing || !strings.Contains(zr.Message, "ob-z2-0 is INACTIVE") {
			return false, fmt.Sprintf("OBZone: %+v", z.Status)
		}
		other := servers["ob-z1-0"]
		return condition(other.Status.Conditions, framework.ConditionReady).Status == metav1.ConditionTrue, "ob-z1-0 not Ready"
	})
	// The pod goes, its observer comes back on its data.
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob-z2-0"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the restarted observer's views are Ready again", allReady)

	// A view deleted by hand is applied again.
	z1 := zones["ob-z1"]
	if err := c.Delete(t.Context(), &z1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "OBZone ob-z1 is back", func() (bool, string) {
		zones, _ := views(t, c, ns)
		z, ok := zones["ob-z1"]
		return ok && z.UID != z1.UID && condition(z.Status.Conditions, framework.ConditionReady).Status == metav1.ConditionTrue,
			fmt.Sprintf("%v %+v", ok, z.Status)
	})
	// Its spec is the operator's.
	s := servers["ob-z3-0"]
	s.Spec.Ordinal = 1
	if err := c.Update(t.Context(), &s); !apierrors.IsInvalid(err) {
		t.Errorf("an edit of an OBServer's spec: %v; want Invalid", err)
	}
}

// parameterValues reads name's value on every server, as OceanBase
// reports it.
func parameterValues(t *testing.T, db *sql.DB, name string) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT SVR_IP, ZONE, VALUE FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = ? AND TENANT_ID IS NULL", name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ip, zone, value string
		if err := rows.Scan(&ip, &zone, &value); err != nil {
			t.Fatal(err)
		}
		out[zone] = value
	}
	return out
}

func parameterReady(c client.Client, ns, name string, check func(*obv1.OBParameter) string) func() (bool, string) {
	return func() (bool, string) {
		p := &obv1.OBParameter{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err.Error()
		}
		r := condition(p.Status.Conditions, framework.ConditionReady)
		if r.Status != metav1.ConditionTrue || r.ObservedGeneration != p.Generation {
			return false, fmt.Sprintf("ready %+v, status %+v", r, p.Status)
		}
		if why := check(p); why != "" {
			return false, why
		}
		return true, ""
	}
}

// TestParameter sets a parameter on every server of a three-zone cluster,
// another on one zone and a third on one server; sets the first back when it is changed through
// SQL; changes it; leaves it in OceanBase when the OBParameter goes; and
// reports a name OceanBase refuses as an invalid spec, with OceanBase's
// message, without retrying. Admission rejects a parameter of a missing
// cluster, of a zone it does not have, one the cluster's spec sets, and
// one another OBParameter sets.
func TestParameter(t *testing.T) {
	c, ns, p := setup(t, 118)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image:      "localhost/obsim:1.0",
		Zones:      []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
		Parameters: []obv1.Parameter{{Name: "max_syslog_file_count", Value: "4"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	param := func(name, parameter, value, zone string) *obv1.OBParameter {
		return &obv1.OBParameter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: obv1.OBParameterSpec{Cluster: "ob", Name: parameter, Value: value, Zone: zone}}
	}
	pc := oceanbase.NewParameterController(nil, oceanbase.Options{})
	admit := func(p *obv1.OBParameter) error {
		if err := pc.Clashes(t.Context(), c, p); err != nil {
			return err
		}
		return pc.Admit(t.Context(), c, p)
	}
	for _, tc := range []struct {
		p     *obv1.OBParameter
		field string
	}{
		{func() *obv1.OBParameter {
			p := param("x", "syslog_level", "INFO", "")
			p.Spec.Cluster = "nope"
			return p
		}(), "spec.cluster"},
		{param("x", "syslog_level", "INFO", "z9"), "spec.zone"},
		{param("x", "max_syslog_file_count", "8", ""), "spec.name"},
	} {
		if err := admit(tc.p); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("admit %+v: %v; want an error of %s", tc.p.Spec, err, tc.field)
		}
	}
	level := param("level", "syslog_level", "INFO", "")
	if err := admit(level); err != nil {
		t.Fatalf("a valid parameter: %v", err)
	}
	if err := c.Create(t.Context(), level); err != nil {
		t.Fatal(err)
	}
	if err := admit(param("level2", "syslog_level", "WARN", "z1")); err == nil || !strings.Contains(err.Error(), "spec.name") {
		t.Errorf("a second OBParameter of syslog_level: %v", err)
	}
	audit := param("audit", "enable_sql_audit", "False", "z1")
	if err := c.Create(t.Context(), audit); err != nil {
		t.Fatal(err)
	}
	both := param("both", "memory_limit_percentage", "70", "z3")
	both.Spec.Server = "ob-z3-0"
	if err := c.Create(t.Context(), both); !apierrors.IsInvalid(err) {
		t.Errorf("an OBParameter of a zone and a server: %v; want Invalid", err)
	}
	pct := param("pct", "memory_limit_percentage", "70", "")
	pct.Spec.Server = "ob-z3-0"
	if err := c.Create(t.Context(), pct); err != nil {
		t.Fatal(err)
	}

	testenv.Eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))
	testenv.Eventually(t, "syslog_level is INFO on every server", parameterReady(c, ns, "level", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 3 || p.Status.Drifted != 0 || p.Status.SetValue != "INFO" {
			return fmt.Sprintf("status %+v", p.Status)
		}
		return ""
	}))
	testenv.Eventually(t, "enable_sql_audit is False in z1", parameterReady(c, ns, "audit", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 1 || p.Status.Servers[0].Zone != "z1" {
			return fmt.Sprintf("status %+v", p.Status)
		}
		return ""
	}))
	// Idle: no write (Resync is 1 s here).
	before := &obv1.OBParameter{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(level), before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(level), level); err != nil || level.ResourceVersion != before.ResourceVersion {
		t.Errorf("an idle OBParameter was written: %v, version %s then %s", err, before.ResourceVersion, level.ResourceVersion)
	}
	testenv.Eventually(t, "memory_limit_percentage is 70 on ob-z3-0", parameterReady(c, ns, "pct", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 1 || p.Status.Servers[0].Zone != "z3" {
			return fmt.Sprintf("status %+v", p.Status)
		}
		return ""
	}))
	ob = get(t, c, ns, "ob")
	db := login(t, c, p, ob, "operator", "", "ob-operator")
	if got := parameterValues(t, db, "memory_limit_percentage"); !maps.Equal(got, map[string]string{"z1": "80", "z2": "80", "z3": "70"}) {
		t.Fatalf("memory_limit_percentage in OceanBase: %v", got)
	}
	if got := parameterValues(t, db, "syslog_level"); !maps.Equal(got, map[string]string{"z1": "INFO", "z2": "INFO", "z3": "INFO"}) {
		t.Fatalf("syslog_level in OceanBase: %v", got)
	}
	if got := parameterValues(t, db, "enable_sql_audit"); !maps.Equal(got, map[string]string{"z1": "False", "z2": "True", "z3": "True"}) {
		t.Fatalf("enable_sql_audit in OceanBase: %v", got)
	}

	// Drift: changed behind the controller's back, set back.
	if _, err := db.ExecContext(t.Context(), "ALTER SYSTEM SET syslog_level = 'DEBUG'"); err != nil {
		t.Fatal(err)
	}
	if got := parameterValues(t, db, "syslog_level"); got["z2"] != "DEBUG" {
		t.Fatalf("syslog_level after setting DEBUG: %v", got)
	}
	testenv.Eventually(t, "the drift is corrected", func() (bool, string) {
		got := parameterValues(t, db, "syslog_level")
		return maps.Equal(got, map[string]string{"z1": "INFO", "z2": "INFO", "z3": "INFO"}), fmt.Sprint(got)
	})
	testenv.Eventually(t, "a ParameterSet Event names the drifted value", func() (bool, string) {
		var events corev1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Reason == obv1.EventParameterSet && strings.Contains(e.Message, "DEBUG") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})

	// A new value.
	testenv.Update(t, c, level, func(l *obv1.OBParameter) { l.Spec.Value = "WARN" })
	testenv.Eventually(t, "syslog_level is WARN", parameterReady(c, ns, "level", func(*obv1.OBParameter) string {
		if got := parameterValues(t, db, "syslog_level"); !maps.Equal(got, map[string]string{"z1": "WARN", "z2": "WARN", "z3": "WARN"}) {
			return fmt.Sprint(got)
		}
		return ""
	}))

	// Deleted: the value stays.
	if err := c.Delete(t.Context(), level); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the OBParameter is gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(level), &obv1.OBParameter{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if got := parameterValues(t, db, "syslog_level"); got["z1"] != "WARN" {
		t.Errorf("syslog_level after the OBParameter went: %v", got)
	}

	// A name OceanBase does not know: invalid, once.
	unknown := param("unknown", "no_such_parameter", "1", "")
	if err := c.Create(t.Context(), unknown); err != nil {
		t.Fatal(err)
	}
	var version string
	testenv.Eventually(t, "the unknown parameter is an invalid spec", func() (bool, string) {
		o := &obv1.OBParameter{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(unknown), o); err != nil {
			return false, err.Error()
		}
		s := condition(o.Status.Conditions, framework.ConditionSynced)
		version = o.ResourceVersion
		return s.Reason == framework.ReasonInvalidSpec && strings.Contains(s.Message, "unknown parameter 'no_such_parameter'"),
			fmt.Sprintf("%+v", s)
	})
	time.Sleep(3 * time.Second)
	o := &obv1.OBParameter{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(unknown), o); err != nil || o.ResourceVersion != version {
		t.Errorf("the invalid OBParameter changed: %v, version %s then %s", err, version, o.ResourceVersion)
	}
}

// TestClusterDeleted deletes a cluster that has a tenant and a parameter:
// the OBTenant no longer shows the tenant NORMAL (nor its pools) and the
// OBParameter no longer lists servers' values, as nothing can be read;
// its views, left for the garbage collector (envtest runs none: the test
// deletes them as it would), keep what they said rather than each
// recording "WaitingForDependencies: not found" for a cluster that was
// deleted (issue 27 item 12).
func TestClusterDeleted(t *testing.T) {
	c, ns, _ := setup(t, 82)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", 1))
	tn := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}},
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
	}}
	param := &obv1.OBParameter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "syslog"},
		Spec: obv1.OBParameterSpec{Cluster: "ob", Name: "syslog_level", Value: "WARN"}}
	for _, o := range []client.Object{tn, param} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the tenant is NORMAL", tenantReady(c, ns, "t1", func(tn *obv1.OBTenant) string {
		if tn.Status.TenantStatus != "NORMAL" {
			return "tenant " + tn.Status.TenantStatus
		}
		return ""
	}))
	eventually(t, "the parameter is applied", parameterReady(c, ns, "syslog", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 1 {
			return fmt.Sprintf("servers %+v", p.Status.Servers)
		}
		return ""
	}))
	eventually(t, "the views are Ready", func() (bool, string) {
		zones, servers := views(t, c, ns)
		z, s := zones["ob-z1"], servers["ob-z1-0"]
		return condition(z.Status.Conditions, framework.ConditionReady).Status == metav1.ConditionTrue &&
			condition(s.Status.Conditions, framework.ConditionReady).Status == metav1.ConditionTrue, "views not Ready"
	})
	zones, servers := views(t, c, ns)

	if err := c.Delete(t.Context(), get(t, c, ns, "ob")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster is gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(ob), &obv1.OBCluster{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	eventually(t, "the tenant and the parameter show nothing of OceanBase", func() (bool, string) {
		got, p := &obv1.OBTenant{}, &obv1.OBParameter{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(tn), got); err != nil {
			return false, err.Error()
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(param), p); err != nil {
			return false, err.Error()
		}
		r := condition(got.Status.Conditions, framework.ConditionReady)
		return r.Reason == framework.ReasonWaitingForDependencies && got.Status.TenantStatus == "" && got.Status.Pools == nil &&
				got.Status.TenantID == 0 && len(p.Status.Servers) == 0,
			fmt.Sprintf("tenant %+v; parameter %+v", got.Status, p.Status)
	})
	// The views' passes, started by the cluster's deletion and by an edit.
	for _, o := range []client.Object{new(zones["ob-z1"]), new(servers["ob-z1-0"])} {
		testenv.Update(t, c, o, func(o client.Object) { o.SetAnnotations(map[string]string{"touched": "yes"}) })
	}
	time.Sleep(3 * time.Second)
	after, afterServers := views(t, c, ns)
	for name, conds := range map[string][]metav1.Condition{"ob-z1": after["ob-z1"].Status.Conditions,
		"ob-z1-0": afterServers["ob-z1-0"].Status.Conditions} {
		for _, ct := range []string{framework.ConditionReady, framework.ConditionDependenciesReady} {
			if r := condition(conds, ct); r.Status != metav1.ConditionTrue {
				t.Errorf("view %s, its cluster deleted: %s %+v", name, ct, r)
			}
		}
	}
	var events eventsv1.EventList
	if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if (e.Regarding.Kind == "OBZone" || e.Regarding.Kind == "OBServer") && strings.Contains(e.Note, "Waiting") {
			t.Errorf("Event %s on %s %s: %s", e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	// The garbage collector's deletion: the views go.
	for _, o := range []client.Object{new(after["ob-z1"]), new(afterServers["ob-z1-0"])} {
		if err := client.IgnoreNotFound(c.Delete(t.Context(), o)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the views are gone", func() (bool, string) {
		zones, servers := views(t, c, ns)
		return len(zones) == 0 && len(servers) == 0, fmt.Sprintf("%d OBZones, %d OBServers", len(zones), len(servers))
	})
}

// TestTenantParameter sets a tenant's parameter for one tenant (the other
// tenant keeps OceanBase's default), sets it back when it is changed through
// SQL, and reports a cluster parameter named with spec.tenant, and a
// tenant's named without, as invalid specs. Admission rejects a tenant
// that does not exist, one of another cluster, and spec.tenant with
// spec.zone.
func TestTenantParameter(t *testing.T) {
	c, ns, p := setup(t, 93)
	createTenant(t, c, ns, "orders")
	other := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t2"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}},
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
	}}
	if err := c.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the tenants are created", func() (bool, string) {
		for _, name := range []string{"t1", "t2"} {
			if ok, why := tenantReady(c, ns, name, func(*obv1.OBTenant) string { return "" })(); !ok {
				return false, name + ": " + why
			}
		}
		return true, ""
	})
	param := func(name, parameter, value, tenant string) *obv1.OBParameter {
		return &obv1.OBParameter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: obv1.OBParameterSpec{Cluster: "ob", Name: parameter, Value: value, Tenant: tenant}}
	}
	pc := oceanbase.NewParameterController(nil, oceanbase.Options{})
	for _, tc := range []struct {
		p     *obv1.OBParameter
		field string
	}{
		{param("x", "freeze_trigger_percentage", "30", "nope"), "spec.tenant"},
		{func() *obv1.OBParameter {
			p := param("x", "freeze_trigger_percentage", "30", "t1")
			p.Spec.Cluster = "ob2"
			if err := c.Create(t.Context(), &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob2"},
				Spec: obv1.OBClusterSpec{Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}}}}); err != nil {
				t.Fatal(err)
			}
			return p
		}(), "spec.tenant"},
	} {
		if err := pc.Admit(t.Context(), c, tc.p); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("admit %+v: %v; want an error of %s", tc.p.Spec, err, tc.field)
		}
	}
	zoned := param("x", "freeze_trigger_percentage", "30", "t1")
	zoned.Spec.Zone = "z1"
	if err := c.Create(t.Context(), zoned); err == nil || !strings.Contains(err.Error(), "spec.tenant excludes spec.zone") {
		t.Errorf("spec.tenant with spec.zone: %v", err)
	}

	freeze := param("freeze", "freeze_trigger_percentage", "30", "t1")
	if err := pc.Admit(t.Context(), c, freeze); err != nil {
		t.Fatalf("a valid tenant parameter: %v", err)
	}
	if err := c.Create(t.Context(), freeze); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "freeze_trigger_percentage is 30 for orders", parameterReady(c, ns, "freeze", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 1 || p.Status.Servers[0].Value != "30" {
			return fmt.Sprintf("%+v", p.Status.Servers)
		}
		return ""
	}))
	op := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	var byTenant = map[int64]string{}
	rows, err := op.Query("SELECT TENANT_ID, VALUE FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = 'freeze_trigger_percentage'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		byTenant[id] = v
	}
	rows.Close()
	t1, t2 := &obv1.OBTenant{}, &obv1.OBTenant{}
	for name, tn := range map[string]*obv1.OBTenant{"t1": t1, "t2": t2} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, tn); err != nil {
			t.Fatal(err)
		}
	}
	if byTenant[t1.Status.TenantID] != "30" || byTenant[t2.Status.TenantID] != "20" {
		t.Errorf("freeze_trigger_percentage by tenant id: %v; want 30 for orders (%d), the default 20 for t2 (%d)", byTenant, t1.Status.TenantID, t2.Status.TenantID)
	}

	// Changed through SQL: set back.
	if _, err := op.Exec("ALTER SYSTEM SET freeze_trigger_percentage = 40 TENANT = 'orders'"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "set back to 30", parameterReady(c, ns, "freeze", func(p *obv1.OBParameter) string {
		if len(p.Status.Servers) != 1 || p.Status.Servers[0].Value != "30" {
			return fmt.Sprintf("%+v", p.Status.Servers)
		}
		return ""
	}))

	// The wrong kind, either way: invalid specs.
	for _, bad := range []*obv1.OBParameter{param("cluster-one", "syslog_level", "INFO", "t1"), param("tenant-one", "freeze_trigger_percentage", "30", "")} {
		if err := c.Create(t.Context(), bad); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, bad.Name+" is an invalid spec", func() (bool, string) {
			got := &obv1.OBParameter{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(bad), got); err != nil {
				return false, err.Error()
			}
			s := condition(got.Status.Conditions, framework.ConditionSynced)
			return s.Reason == framework.ReasonInvalidSpec && strings.Contains(s.Message, "spec.tenant"), fmt.Sprintf("%+v", s)
		})
	}
}
