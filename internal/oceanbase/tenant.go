package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The tenant controller's RBAC, on top of the cluster controller's.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenants,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenants/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenants/finalizers,verbs=update

// Tenant is the kind the tenant controller reconciles.
type Tenant = obv1.OBTenant

// TenantContext is the framework's pass context of an OBTenant.
type TenantContext = framework.Context[*Tenant]

// TenantAction is an imperative step the tenant controller's Observe
// returns.
type TenantAction = framework.Action[*Tenant]

// TenantController is the OBTenant actor: it creates the tenant (unit
// config, a pool per zone, the tenant, its root password), keeps its unit
// config, unit number, zones, primary zone and allowlist as the spec says,
// and drops it on deletion when the reclaim policy is Delete. It logs in to
// the cluster as the cluster's operator user.
type TenantController struct {
	opts   Options
	create *framework.Background
	logins *logins
}

// NewTenantController returns a tenant controller with opts.
func NewTenantController(opts Options) *TenantController {
	opts = opts.withDefaults()
	return &TenantController{opts: opts, create: framework.NewBackground(), logins: newLogins(opts)}
}

func setupTenants(mgr ctrl.Manager, opts Options) error {
	c := NewTenantController(opts)
	_, err := framework.Setup(mgr, framework.Options[*Tenant, *tenant]{
		Actor:  c,
		App:    build.TenantApp,
		PartOf: build.PartOf,
		Flows:  []framework.Flow[*Tenant, *tenant]{c.createFlow(), c.zonesFlow()},
		Resync: c.opts.Resync,
		// A tenant's role changes by an OBTenantOperation: status says so
		// at once, not at the next resync.
		Customize: watchOperations,
	})
	return err
}

// watchOperations makes a change of an OBTenantOperation start a pass of
// each OBTenant it names.
func watchOperations(b *builder.Builder) *builder.Builder {
	return b.Watches(&obv1.OBTenantOperation{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, name := range o.(*TenantOperation).Tenants() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
		}
		return out
	}))
}

// Default applies the API's defaults (obv1.DefaultTenant).
func (*TenantController) Default(t *Tenant) { obv1.DefaultTenant(t) }

// Dependencies returns the tenant's cluster: the tenant waits for its cluster to be bootstrapped (not
// Ready: a tenant can change while the cluster scales).
//
// It runs first in every pass that gets this far, so it also clears what
// status says of the tenant in OceanBase: Declare writes it again from
// what this pass reads. A pass that cannot read OceanBase (the cluster
// deleted, not bootstrapped, not answering) leaves it empty rather than
// showing the tenant NORMAL, its data perhaps gone with its cluster.
func (*TenantController) Dependencies(ctx *TenantContext) ([]framework.Dependency, error) {
	clearTenantObservation(&ctx.Obj.Status)
	return bootstrappedCluster(ctx.Obj.Spec.Cluster), nil
}

// clearTenantObservation empties what status says of the tenant in
// OceanBase.
func clearTenantObservation(s *obv1.OBTenantStatus) {
	s.TenantID, s.TenantStatus, s.TenantRole, s.Locality, s.PrimaryZone, s.Pools = 0, "", "", "", "", nil
}

// tenant is what a pass observed of an OBTenant's tenant in OceanBase
// (as cluster is of an OBCluster): Declare reads it and returns it, for
// Observe and the flows' steps.
type tenant struct {
	cluster *Cluster
	db      *sql.DB
	tenant  *obsql.Tenant          // nil: OceanBase has no such tenant
	pools   map[string]*obsql.Pool // every pool, by name
	unit    *obsql.UnitConfig      // the tenant's unit config; nil: none
	jobBusy bool                   // a locality change is in progress
	// variables are the tenant's global system variables, by name (read
	// only when the spec names some).
	variables map[string]string
	// restore is the tenant's OBTenantRestore when spec.source.restore is
	// set; nil before the create flow makes it.
	restore *obv1.OBTenantRestore
}

// restoring reports whether the tenant is to be restored and its restore
// has not succeeded: nothing may change it meanwhile.
func (st *tenant) restoring(t *Tenant) bool {
	return t.Spec.Source != nil && t.Spec.Source.Restore != nil && (st.restore == nil || !restoreSucceeded(st.restore))
}

// primary reports whether OceanBase has the tenant as a primary: a
// standby takes its variables (the allowlist) from its primary.
func (st *tenant) primary() bool {
	return st.tenant != nil && (st.tenant.Role == "" || st.tenant.Role == obv1.TenantRolePrimary)
}

// Declare ensures the root password Secret, reads the tenant, its pools
// and its unit config from OceanBase into status, and sets Ready. It
// returns what it read, for Observe and the flows' steps; nil when
// OceanBase could not be read.
func (c *TenantController) Declare(ctx *TenantContext) (*tenant, error) {
	t := ctx.Obj
	newSecret := func(pw string) *corev1.Secret { return build.TenantPasswordSecret(t, pw) }
	if err := framework.EnsurePasswordSecret(ctx, ctx.Client, ctx.Reader, ctx.Log, newSecret); err != nil {
		return nil, err
	}
	st, err := c.observe(ctx)
	if err != nil {
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil // the next pass tries again; status says why
	}
	c.writeStatus(t, st)
	c.setReady(ctx, st)
	return st, nil
}

func (c *TenantController) observe(ctx *TenantContext) (*tenant, error) {
	ob := ctx.Dependencies[0].(*Cluster)
	st := &tenant{cluster: ob}
	db, err := operatorDB(ctx, framework.SecretReader(ctx.Client, ctx.Reader), c.logins, tenantHolder(ctx.Obj), ob)
	if err != nil {
		return nil, err
	}
	name := ctx.Obj.Spec.TenantName
	if st.tenant, err = obsql.TenantByName(ctx, db, name); err == nil {
		st.pools, err = obsql.Pools(ctx, db)
	}
	if err == nil && st.tenant != nil {
		st.jobBusy, err = obsql.LocalityJobRunning(ctx, db, st.tenant.ID)
	}
	if err == nil && st.tenant != nil && len(ctx.Obj.Spec.Variables) > 0 {
		st.variables, err = obsql.TenantVariables(ctx, db, st.tenant.ID)
	}
	var configs map[string]obsql.UnitConfig
	if err == nil {
		configs, err = obsql.UnitConfigs(ctx, db)
	}
	if err != nil {
		c.logins.drop(ob.UID, db)
		return nil, err
	}
	if u, ok := configs[build.UnitConfigName(ctx.Obj)]; ok {
		st.unit = &u
	}
	if src := ctx.Obj.Spec.Source; src != nil && src.Restore != nil {
		r := &obv1.OBTenantRestore{}
		switch err := ctx.Client.Get(ctx, client.ObjectKeyFromObject(ctx.Obj), r); {
		case err == nil && metav1.IsControlledBy(r, ctx.Obj):
			st.restore = r
		case client.IgnoreNotFound(err) != nil:
			return nil, fmt.Errorf("get the OBTenantRestore %s: %w", ctx.Obj.Name, err)
		}
	}
	st.db = db
	return st, nil
}

// tenantHolder names the tenant's passes as a user of its cluster's login.
func tenantHolder(t *Tenant) string { return holderOf("OBTenant", t.UID) }

// tenantPools are the tenant's pools, by zone.
func (st *tenant) tenantPools() map[string]*obsql.Pool {
	out := map[string]*obsql.Pool{}
	if st.tenant == nil {
		return out
	}
	for _, p := range st.pools {
		if p.TenantID == st.tenant.ID {
			for _, z := range p.Zones {
				out[z] = p
			}
		}
	}
	return out
}

func (c *TenantController) writeStatus(t *Tenant, st *tenant) {
	s := &t.Status
	clearTenantObservation(s)
	if st.tenant == nil {
		return
	}
	s.TenantID, s.TenantStatus, s.TenantRole = st.tenant.ID, st.tenant.Status, st.tenant.Role
	s.Locality, s.PrimaryZone = st.tenant.Locality, st.tenant.PrimaryZone
	for _, p := range st.pools {
		if p.TenantID == st.tenant.ID {
			s.Pools = append(s.Pools, obv1.OBPoolStatus{Name: p.Name, Zones: p.Zones, UnitNum: int32(p.UnitNum),
				ActiveUnits: int32(p.ActiveUnits)})
		}
	}
	slices.SortFunc(s.Pools, func(a, b obv1.OBPoolStatus) int { return strings.Compare(a.Name, b.Name) })
}

// drift says how the tenant differs from the spec, empty when it does not.
func (st *tenant) drift(t *Tenant) string {
	want := build.TenantZones(t)
	pools := st.tenantPools()
	switch {
	case !build.SameZones(st.tenant.Locality, want):
		return fmt.Sprintf("locality is %q, the spec's zones make %q", st.tenant.Locality, build.Locality(want))
	case st.unit == nil || *st.unit != unitWithLogDisk(build.UnitConfig(t), st.unit):
		return "the unit config differs from spec.unit"
	case !strings.EqualFold(st.tenant.PrimaryZone, t.Spec.PrimaryZone):
		return fmt.Sprintf("primary zone is %q", st.tenant.PrimaryZone)
	case st.primary() && t.Status.ConnectWhiteList != t.Spec.ConnectWhiteList:
		return "the allowlist is not set yet"
	case st.primary() && len(st.variablesToSet(t)) > 0:
		v := st.variablesToSet(t)[0]
		return fmt.Sprintf("variable %s is %q, the spec's is %q", v.Name, st.variables[v.Name], v.Value)
	}
	for _, z := range want {
		if p := pools[z]; p == nil || p.UnitNum != int(t.Spec.UnitNum) {
			return fmt.Sprintf("zone %s does not have %d units", z, t.Spec.UnitNum)
		}
	}
	return ""
}

// variablesToSet are the spec's variables whose value OceanBase does not
// show (compared case-insensitively, as OceanBase prints some its own way).
func (st *tenant) variablesToSet(t *Tenant) []obv1.TenantVariable {
	var out []obv1.TenantVariable
	for _, v := range t.Spec.Variables {
		if have, ok := st.variables[v.Name]; !ok || !strings.EqualFold(have, v.Value) {
			out = append(out, v)
		}
	}
	return out
}

// unitWithLogDisk is want with the log disk OceanBase chose when the spec
// leaves it unset.
func unitWithLogDisk(want obsql.UnitConfig, got *obsql.UnitConfig) obsql.UnitConfig {
	if want.LogDisk == 0 && got != nil {
		want.LogDisk = got.LogDisk
	}
	return want
}

func (c *TenantController) setReady(ctx *TenantContext, st *tenant) {
	t := ctx.Obj
	switch {
	case st.tenant != nil && st.restoring(t) && st.restore == nil:
		ctx.SetReady(false, obv1.ReasonTenantExists, fmt.Sprintf("OceanBase already has a tenant %s: spec.source.restore never restores over a tenant",
			t.Spec.TenantName))
	case st.tenant == nil:
		ctx.SetReady(false, obv1.ReasonTenantMissing, fmt.Sprintf("OceanBase has no tenant %s", t.Spec.TenantName))
	case st.tenant.Status == "RESTORE" || st.restoring(t):
		ctx.SetReady(false, obv1.ReasonTenantRestoring, fmt.Sprintf("OceanBase is restoring the tenant (OBTenantRestore %s)", t.Name))
	case st.tenant.Status == "CREATING":
		ctx.SetReady(false, obv1.ReasonTenantCreating, "OceanBase is creating the tenant")
	case st.tenant.Status != "NORMAL":
		ctx.SetReady(false, obv1.ReasonTenantDropping, fmt.Sprintf("the tenant is %s", st.tenant.Status))
	case st.jobBusy:
		ctx.SetReady(false, obv1.ReasonLocalityChanging, "a locality change is in progress")
	case st.drift(t) != "":
		ctx.SetReady(false, obv1.ReasonTenantDrifted, st.drift(t))
	default:
		for _, p := range t.Status.Pools {
			if want := p.UnitNum * int32(len(p.Zones)); p.ActiveUnits < want {
				ctx.SetReady(false, obv1.ReasonUnitsNotActive, fmt.Sprintf("pool %s has %d of %d units active", p.Name, p.ActiveUnits, want))
				return
			}
		}
		ctx.SetReady(true, "", fmt.Sprintf("tenant %s (id %d) is NORMAL in %d zones", t.Spec.TenantName,
			st.tenant.ID, len(t.Spec.Zones)))
	}
}

// Observe creates a missing tenant, and brings an existing one to the
// spec: zones first (a flow, one zone at a time), then the unit config, the
// unit number, the primary zone, the allowlist and the variables.
func (c *TenantController) Observe(ctx *TenantContext, st *tenant) (TenantAction, error) {
	t := ctx.Obj
	switch {
	case st == nil:
		return nil, nil // OceanBase did not answer; status says so
	case st.tenant == nil || st.tenant.Status == "CREATING":
		return framework.StartFlow[*Tenant](flowCreateTenant, "tenant "+t.Spec.TenantName), nil
	case st.restoring(t):
		return nil, nil // a tenant this OBTenant did not restore, or whose restore failed: status says so
	case st.tenant.Status != "NORMAL" || st.jobBusy:
		return nil, nil
	case !build.SameZones(st.tenant.Locality, build.TenantZones(t)):
		return framework.StartFlow[*Tenant](flowTenantZones, "zones "+strings.Join(build.TenantZones(t), ", ")), nil
	case st.unit == nil || *st.unit != unitWithLogDisk(build.UnitConfig(t), st.unit):
		return framework.Named("AlterUnit", func(ctx *TenantContext) error { return c.alterUnit(ctx, st) }), nil
	case !strings.EqualFold(st.tenant.PrimaryZone, t.Spec.PrimaryZone):
		return framework.Named("SetPrimaryZone", func(ctx *TenantContext) error { return c.setPrimaryZone(ctx, st) }), nil
	case st.primary() && t.Status.ConnectWhiteList != t.Spec.ConnectWhiteList:
		return framework.Named("SetAllowlist", func(ctx *TenantContext) error { return c.setAllowlist(ctx, st) }), nil
	case st.primary() && len(st.variablesToSet(t)) > 0:
		return framework.Named("SetVariables", func(ctx *TenantContext) error { return c.setVariables(ctx, st) }), nil
	}
	for _, p := range st.tenantPools() {
		if p.UnitNum != int(t.Spec.UnitNum) {
			return framework.Named("SetUnitNum", func(ctx *TenantContext) error { return c.setUnitNum(ctx, st) }), nil
		}
	}
	return nil, nil
}

// Finalize drops the tenant, then its pools and unit config, when the
// reclaim policy is Delete; with Retain it leaves all of them, and the
// generated root password Secret, to an OBTenant created again.
func (c *TenantController) Finalize(ctx *TenantContext) (bool, error) {
	t := ctx.Obj
	done, err := c.finalize(ctx)
	if done && err == nil {
		c.logins.release(tenantHolder(t))
	}
	return done, err
}

func (c *TenantController) finalize(ctx *TenantContext) (bool, error) {
	t := ctx.Obj
	if t.Spec.ReclaimPolicy != "Delete" {
		return true, nil
	}
	ob := &Cluster{}
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Cluster}, ob)
	if apierrors.IsNotFound(err) || err == nil && ob.DeletionTimestamp != nil {
		ctx.Log.Info("The cluster is gone; nothing to drop", "cluster", t.Spec.Cluster)
		return true, framework.DeleteGeneratedSecret(ctx, ctx.Client, build.TenantPasswordSecret(t, ""))
	}
	if err != nil {
		return false, err
	}
	db, err := operatorDB(ctx, framework.SecretReader(ctx.Client, ctx.Reader), c.logins, tenantHolder(t), ob)
	if err != nil {
		return false, err
	}
	done, err := c.dropTenant(ctx, db)
	if !done || err != nil {
		return false, err
	}
	return true, framework.DeleteGeneratedSecret(ctx, ctx.Client, build.TenantPasswordSecret(t, ""))
}
