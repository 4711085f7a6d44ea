package oceanbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// Tenant flows and their steps, persisted in status.operation (a step's
// earlier names are in its Was).
const (
	flowCreateTenant      = "create"
	stepCreateUnitConfig  = "create-unit-config"
	stepCreatePools       = "create-pools"
	stepCreateTenant      = "create-tenant"
	stepSetRootPassword   = "set-root-password"
	flowTenantZones       = "zones"
	stepChangeZones       = "change-zones"
	allowlistVariable     = "ob_tcp_invited_nodes"
	tenantFlowMaxAttempts = 10
)

// createFlow creates a tenant: its unit config, a pool per zone, the
// tenant (CREATE TENANT takes about a minute on OceanBase: it runs in the
// background and the step polls it), and its root password. Every step is
// idempotent (IF NOT EXISTS, or a login that tells), so a flow resumed
// after a restart, or started for a tenant whose creation another manager
// began, finishes the same tenant.
func (c *TenantController) createFlow() framework.Flow[*Tenant, *tenant] {
	return framework.Flow[*Tenant, *tenant]{
		Name: flowCreateTenant,
		Steps: []framework.Step[*Tenant, *tenant]{
			{Name: stepCreateUnitConfig, Was: []string{"CreateUnitConfig"}, Run: c.createUnitConfig},
			{Name: stepCreatePools, Was: []string{"CreatePools"}, Run: c.createPools},
			{Name: stepCreateTenant, Was: []string{"CreateTenant"}, Run: c.createTenant},
			{Name: stepSetRootPassword, Was: []string{"SetRootPassword"}, Run: c.setRootPassword},
		},
		MaxAttempts: tenantFlowMaxAttempts,
	}
}

// tenantConnected returns what the pass observed (seen), or why OceanBase
// could not be read.
func tenantConnected(seen *tenant) (*tenant, error) {
	if seen == nil {
		return nil, errors.New("OceanBase has not answered")
	}
	return seen, nil
}

func (c *TenantController) createUnitConfig(ctx *TenantContext, seen *tenant) (bool, error) {
	st, err := tenantConnected(seen)
	if err != nil {
		return false, err
	}
	return true, ensureUnitConfig(ctx, st)
}

// ensureUnitConfig creates the tenant's unit config, or alters an existing
// one that differs from the spec: CREATE RESOURCE UNIT IF NOT EXISTS keeps
// a unit made from an earlier spec, such as one whose memory OceanBase
// found below its minimum (ob-operator #177), which the user then raised.
func ensureUnitConfig(ctx *TenantContext, st *tenant) error {
	name, want := build.UnitConfigName(ctx.Obj), build.UnitConfig(ctx.Obj)
	switch {
	case st.unit == nil:
		return obsql.CreateUnitConfig(ctx, st.db, name, want)
	case *st.unit != unitWithLogDisk(want, st.unit):
		ctx.Log.Info("Altering the unit config to the spec's", "unitConfig", name)
		return obsql.AlterUnitConfig(ctx, st.db, name, want)
	}
	return nil
}

func (c *TenantController) createPools(ctx *TenantContext, seen *tenant) (bool, error) {
	st, err := tenantConnected(seen)
	if err != nil {
		return false, err
	}
	t := ctx.Obj
	for _, z := range build.TenantZones(t) {
		if err := obsql.CreatePool(ctx, st.db, build.PoolName(t, z), build.UnitConfigName(t), t.Spec.UnitNum, z); err != nil {
			return false, err
		}
	}
	return true, nil
}

// createTenant sends CREATE TENANT IF NOT EXISTS in the background, and is
// done when OceanBase reports the tenant NORMAL.
func (c *TenantController) createTenant(ctx *TenantContext, seen *tenant) (bool, error) {
	st, err := tenantConnected(seen)
	if err != nil {
		return false, err
	}
	t := ctx.Obj
	if t.Spec.Source != nil && t.Spec.Source.Restore != nil {
		return c.restoreTenant(ctx, st)
	}
	if st.tenant != nil && st.tenant.Status == "NORMAL" {
		_, _ = c.create.Poll(t.UID) // forget a finished run: the tenant is what counts
		ctx.Event(corev1.EventTypeNormal, obv1.EventTenantCreated, "Created tenant %s (id %d)", t.Spec.TenantName, st.tenant.ID)
		return true, nil
	}
	switch state, err := c.create.Poll(t.UID); {
	case state == framework.RunRunning:
		return false, nil
	case state == framework.RunFinished && err != nil:
		return false, err
	case state == framework.RunFinished || st.tenant != nil:
		return false, nil // OceanBase is finishing it: wait for NORMAL
	}
	if err := ensureUnitConfig(ctx, st); err != nil { // the spec may have changed since the first step
		return false, err
	}
	zones := build.TenantZones(t)
	opts := obsql.TenantOptions{Pools: build.PoolNames(t, zones), Locality: build.Locality(zones),
		PrimaryZone: t.Spec.PrimaryZone, Charset: t.Spec.Charset, WhiteList: t.Spec.ConnectWhiteList}
	db, name := st.db, t.Spec.TenantName
	create := func(bg context.Context) error { return obsql.CreateTenant(bg, db, name, opts) }
	if src := t.Spec.Source; src != nil && src.Primary != nil {
		source, err := c.standbySource(ctx, src.Primary.Tenant)
		if err != nil {
			ctx.Operation().Message = err.Error()
			return false, nil // the primary is not ready yet: wait for it
		}
		create = func(bg context.Context) error { return obsql.CreateStandbyTenant(bg, db, name, source, opts) }
		ctx.Log.Info("Creating a standby tenant", "tenant", name, "primary", src.Primary.Tenant)
	} else {
		ctx.Log.Info("Creating a tenant", "tenant", name, "zones", zones)
	}
	release := c.logins.hold(db) // kept open for the statement, whatever replaces it meanwhile
	c.create.Start(t.UID, bootstrapTimeout, func(bg context.Context) error {
		defer release()
		return create(bg)
	})
	return false, nil
}

// standbySource returns the LOG_RESTORE_SOURCE of a standby of the
// OBTenant primary: its cluster's observers, and its read-only standby
// user, which it makes (or gives the password of its Secret again) in
// the primary tenant, as root with the primary's root password.
func (c *TenantController) standbySource(ctx *TenantContext, primary string) (string, error) {
	p := &Tenant{}
	if err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: ctx.Obj.Namespace, Name: primary}, p); err != nil {
		return "", fmt.Errorf("waiting for the primary OBTenant %s: %w", primary, err)
	}
	obv1.DefaultTenant(p)
	if p.Status.TenantStatus != "NORMAL" || p.Status.TenantRole != obv1.TenantRolePrimary {
		return "", fmt.Errorf("waiting for the OBTenant %s's tenant to be a NORMAL PRIMARY (it is %q, %q)", primary,
			p.Status.TenantStatus, p.Status.TenantRole)
	}
	ob := &Cluster{}
	if err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Cluster}, ob); err != nil {
		return "", fmt.Errorf("get the primary's OBCluster %s: %w", p.Spec.Cluster, err)
	}
	newSecret := func(pw string) *corev1.Secret { return build.StandbySourceSecret(p, pw) }
	if err := framework.EnsurePasswordSecret(ctx, ctx.Client, ctx.Reader, ctx.Log, newSecret); err != nil {
		return "", err
	}
	standbyPW, err := framework.ReadPassword(ctx, ctx.Reader, p.Namespace, newSecret("").Name)
	if err == nil {
		var rootPW string
		if rootPW, err = framework.ReadPassword(ctx, ctx.Reader, p.Namespace, p.Spec.RootPassword); err == nil {
			err = c.ensureStandbyUser(ctx, ob, p.Spec.TenantName, rootPW, standbyPW)
		}
	}
	if err != nil {
		return "", err
	}
	return build.LogRestoreSource(clusterHosts(ob), p.Spec.TenantName, standbyPW), nil
}

// ensureStandbyUser makes the primary tenant's standby user, with
// password pw, able to read its log: SELECT (on every database; OceanBase's
// documentation grants it on oceanbase.*, the views the standby reads).
func (c *TenantController) ensureStandbyUser(ctx *TenantContext, ob *Cluster, tenant, rootPW, pw string) error {
	db, err := c.logins.connect(ctx, clusterHosts(ob), obsql.Login{User: rootUser, Tenant: tenant, Password: rootPW})
	if err != nil {
		return fmt.Errorf("log in to the primary as root@%s: %w", tenant, err)
	}
	defer db.Close()
	return obsql.EnsureUser(ctx, db, build.StandbyUser, pw, "SELECT")
}

// restoreTenant makes the tenant by a restore: it creates the tenant's
// OBTenantRestore (which sends ALTER SYSTEM RESTORE with the pools the
// flow made) and is done once the restore succeeded and OceanBase reports
// the tenant NORMAL. A tenant that exists before the OBTenantRestore does
// is not restored over: the flow fails.
func (c *TenantController) restoreTenant(ctx *TenantContext, st *tenant) (bool, error) {
	t, op := ctx.Obj, ctx.Operation()
	switch r := st.restore; {
	case r == nil && st.tenant != nil:
		return false, framework.Terminal(fmt.Errorf("OceanBase already has a tenant %s: spec.source.restore never restores over a tenant", t.Spec.TenantName))
	case r == nil:
		r = build.TenantRestore(t)
		if err := client.IgnoreAlreadyExists(ctx.Client.Create(ctx, r)); err != nil {
			return false, fmt.Errorf("create the OBTenantRestore %s: %w", r.Name, err)
		}
		ctx.Log.Info("Restoring the tenant", "tenant", t.Spec.TenantName, "restore", r.Name)
		op.Message = "created OBTenantRestore " + r.Name
		return false, nil
	case r.Status.JobStatus == obv1.RestoreFailed:
		return false, framework.Terminal(fmt.Errorf("OBTenantRestore %s failed: %s", r.Name, r.Status.Result))
	case restoreSucceeded(r) && st.tenant != nil && st.tenant.Status == "NORMAL":
		ctx.Event(corev1.EventTypeNormal, obv1.EventTenantCreated, "Restored tenant %s (id %d) to SCN %d", t.Spec.TenantName, st.tenant.ID, r.Status.RestoreSCN)
		return true, nil
	}
	op.Message = fmt.Sprintf("waiting for OBTenantRestore %s (job %s, role %s)", st.restore.Name, st.restore.Status.JobStatus, st.restore.Status.TenantRole)
	return false, nil
}

// setRootPassword sets the tenant's root password from its Secret. A new
// tenant's root has none; a restored tenant's root has its backup's, which
// the Secret must hold; a step run again logs in with the Secret's. A
// login with the Secret's password needs nothing more (nor could a
// standby, read only, take it).
func (c *TenantController) setRootPassword(ctx *TenantContext, seen *tenant) (bool, error) {
	st, err := tenantConnected(seen)
	if err != nil {
		return false, err
	}
	t := ctx.Obj
	pw, err := framework.ReadPassword(ctx, framework.SecretReader(ctx.Client, ctx.Reader), t.Namespace, t.Spec.RootPassword)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, try := range []string{pw, ""} {
		db, err := c.logins.connect(ctx, clusterHosts(st.cluster), obsql.Login{User: rootUser, Tenant: t.Spec.TenantName, Password: try})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if try == pw {
			db.Close()
			return true, nil
		}
		err = obsql.SetPassword(ctx, db, rootUser, pw)
		db.Close()
		return err == nil, err
	}
	if t.Spec.Source != nil {
		errs = append(errs, fmt.Errorf("a restored tenant keeps its backup's users: the Secret %s must hold the backed-up tenant's root password", t.Spec.RootPassword))
	}
	return false, fmt.Errorf("log in as root@%s: %w", t.Spec.TenantName, errors.Join(errs...))
}

// zonesFlow brings the tenant's zones to the spec's, one zone at a time
// as OceanBase changes a locality: a zone is added by creating its pool,
// giving it to the tenant and adding it to the locality; removed by taking
// it out of the locality, then the pool from the tenant, then dropping the
// pool. Each run of the step makes one change and waits for the locality
// job it starts, so a flow resumed after a restart picks up where
// OceanBase is.
func (c *TenantController) zonesFlow() framework.Flow[*Tenant, *tenant] {
	return framework.Flow[*Tenant, *tenant]{
		Name:        flowTenantZones,
		Steps:       []framework.Step[*Tenant, *tenant]{{Name: stepChangeZones, Was: []string{"ChangeZones"}, Run: c.changeZones}},
		MaxAttempts: tenantFlowMaxAttempts,
	}
}

func (c *TenantController) changeZones(ctx *TenantContext, seen *tenant) (bool, error) {
	st, err := tenantConnected(seen)
	if err != nil {
		return false, err
	}
	t, op := ctx.Obj, ctx.Operation()
	if st.tenant == nil || st.tenant.Status != "NORMAL" || st.jobBusy {
		op.Message = "waiting for OceanBase's locality job"
		return false, nil
	}
	op.Message = ""
	change, err := c.nextZoneChange(ctx, st)
	if change == "" || err != nil {
		return change == "" && err == nil, err
	}
	ctx.Log.Info("Changing the tenant's zones", "tenant", t.Spec.TenantName, "change", change)
	ctx.Event(corev1.EventTypeNormal, obv1.EventZonesChanging, "Tenant %s: %s", t.Spec.TenantName, change)
	return false, nil
}

// nextZoneChange makes the next change towards the spec's zones and says
// what it did; "" when there is nothing left to do.
func (c *TenantController) nextZoneChange(ctx *TenantContext, st *tenant) (string, error) {
	t, db, name := ctx.Obj, st.db, ctx.Obj.Spec.TenantName
	current, want := build.LocalityZones(st.tenant.Locality), build.TenantZones(t)
	owned := st.tenantPools()
	for _, z := range want {
		if slices.Contains(current, z) {
			continue
		}
		pool := build.PoolName(t, z)
		switch p := st.pools[pool]; {
		case p == nil:
			return "create pool " + pool, obsql.CreatePool(ctx, db, pool, build.UnitConfigName(t), t.Spec.UnitNum, z)
		case p.TenantID != st.tenant.ID:
			return "give pool " + pool + " to the tenant", obsql.AlterTenant(ctx, db, name, "RESOURCE_POOL_LIST", poolList(owned, pool)...)
		}
		locality := build.Locality(append(slices.Clone(current), z))
		return "add zone " + z, obsql.AlterTenant(ctx, db, name, "LOCALITY", locality)
	}
	for _, z := range current {
		if !slices.Contains(want, z) {
			locality := build.Locality(slices.DeleteFunc(slices.Clone(current), func(o string) bool { return o == z }))
			return "remove zone " + z, obsql.AlterTenant(ctx, db, name, "LOCALITY", locality)
		}
	}
	for z, p := range owned {
		if !slices.Contains(want, z) {
			delete(owned, z)
			return "take pool " + p.Name + " from the tenant", obsql.AlterTenant(ctx, db, name, "RESOURCE_POOL_LIST", poolList(owned, "")...)
		}
	}
	for _, p := range st.pools {
		zone, ours := strings.CutPrefix(p.Name, build.PoolName(t, ""))
		if ours && p.TenantID == 0 && !slices.Contains(want, zone) {
			return "drop pool " + p.Name, obsql.Drop(ctx, db, "RESOURCE POOL", p.Name)
		}
	}
	return "", nil
}

// poolList is the names of pools, and extra when set, sorted.
func poolList(pools map[string]*obsql.Pool, extra string) []string {
	seen := map[string]bool{}
	for _, p := range pools {
		seen[p.Name] = true
	}
	if extra != "" {
		seen[extra] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (c *TenantController) alterUnit(ctx *TenantContext, seen *tenant) error {
	st, err := tenantConnected(seen)
	if err != nil {
		return err
	}
	name := build.UnitConfigName(ctx.Obj)
	if st.unit == nil {
		return obsql.CreateUnitConfig(ctx, st.db, name, build.UnitConfig(ctx.Obj))
	}
	ctx.Log.Info("Altering the unit config", "unitConfig", name)
	return obsql.AlterUnitConfig(ctx, st.db, name, build.UnitConfig(ctx.Obj))
}

func (c *TenantController) setUnitNum(ctx *TenantContext, seen *tenant) error {
	st, err := tenantConnected(seen)
	if err != nil {
		return err
	}
	t := ctx.Obj
	ctx.Log.Info("Setting the unit number", "tenant", t.Spec.TenantName, "unitNum", t.Spec.UnitNum)
	ctx.Event(corev1.EventTypeNormal, obv1.EventUnitNumChanged, "Tenant %s: %d units per zone", t.Spec.TenantName, t.Spec.UnitNum)
	return obsql.SetUnitNum(ctx, st.db, t.Spec.TenantName, t.Spec.UnitNum)
}

func (c *TenantController) setPrimaryZone(ctx *TenantContext, seen *tenant) error {
	st, err := tenantConnected(seen)
	if err != nil {
		return err
	}
	return obsql.AlterTenant(ctx, st.db, ctx.Obj.Spec.TenantName, "PRIMARY_ZONE", ctx.Obj.Spec.PrimaryZone)
}

func (c *TenantController) setAllowlist(ctx *TenantContext, seen *tenant) error {
	st, err := tenantConnected(seen)
	if err != nil {
		return err
	}
	t := ctx.Obj
	if err := obsql.SetTenantVariable(ctx, st.db, t.Spec.TenantName, allowlistVariable, t.Spec.ConnectWhiteList); err != nil {
		return err
	}
	t.Status.ConnectWhiteList = t.Spec.ConnectWhiteList
	return nil
}

// setVariables sets the spec's variables whose value OceanBase does not
// show.
func (c *TenantController) setVariables(ctx *TenantContext, seen *tenant) error {
	st, err := tenantConnected(seen)
	if err != nil {
		return err
	}
	t := ctx.Obj
	for _, v := range st.variablesToSet(t) {
		ctx.Log.Info("Setting a tenant variable", "tenant", t.Spec.TenantName, "variable", v.Name)
		if err := obsql.SetTenantVariable(ctx, st.db, t.Spec.TenantName, v.Name, v.Value); err != nil {
			return err
		}
		ctx.Event(corev1.EventTypeNormal, obv1.EventVariableSet, "Tenant %s: set %s = %q (it was %q)", t.Spec.TenantName, v.Name, v.Value, st.variables[v.Name])
	}
	return nil
}

// dropTenant drops the tenant, waits until OceanBase has forgotten it,
// then drops its pools and unit config; done when none is left.
func (c *TenantController) dropTenant(ctx *TenantContext, db *sql.DB) (bool, error) {
	t := ctx.Obj
	found, err := obsql.TenantByName(ctx, db, t.Spec.TenantName)
	switch {
	case err != nil:
		return false, err
	case found != nil && found.Status != "DROPPING":
		ctx.Log.Info("Dropping the tenant", "tenant", t.Spec.TenantName)
		ctx.Event(corev1.EventTypeNormal, obv1.EventDroppingTenant, "Dropping tenant %s (reclaim policy Delete)", t.Spec.TenantName)
		return false, obsql.Drop(ctx, db, "TENANT", t.Spec.TenantName)
	case found != nil:
		return false, nil
	}
	pools, err := obsql.Pools(ctx, db)
	if err != nil {
		return false, err
	}
	for _, p := range pools {
		if strings.HasPrefix(p.Name, build.PoolName(t, "")) && p.TenantID == 0 {
			if err := obsql.Drop(ctx, db, "RESOURCE POOL", p.Name); err != nil {
				return false, err
			}
		}
	}
	configs, err := obsql.UnitConfigs(ctx, db)
	if err != nil {
		return false, err
	}
	if _, ok := configs[build.UnitConfigName(t)]; ok {
		return false, obsql.Drop(ctx, db, "RESOURCE UNIT", build.UnitConfigName(t))
	}
	return true, nil
}
