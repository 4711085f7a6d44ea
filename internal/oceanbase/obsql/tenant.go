package obsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Tenant is a row of DBA_OB_TENANTS.
type Tenant struct {
	ID                    int64
	Name, Status          string // CREATING, NORMAL, DROPPING
	Locality, PrimaryZone string
	// Role is TENANT_ROLE: PRIMARY, STANDBY or RESTORE (read by
	// TenantByName only).
	Role string
	// Type is SYS, USER or META; PreviousLocality is the locality a
	// change in progress started from, empty when none is (both read by
	// Tenants only).
	Type, PreviousLocality string
}

// Tenants lists DBA_OB_TENANTS: the sys tenant, the user tenants and their
// META tenants.
func Tenants(ctx context.Context, db *sql.DB) ([]Tenant, error) {
	rows, err := db.QueryContext(ctx, "SELECT TENANT_ID, TENANT_NAME, TENANT_TYPE, STATUS, LOCALITY, COALESCE(PREVIOUS_LOCALITY, '') AS PREVIOUS_LOCALITY, PRIMARY_ZONE FROM oceanbase.DBA_OB_TENANTS")
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	defer rows.Close()
	var out []Tenant
	for rows.Next() {
		var t Tenant
		if err := rows.Scan(&t.ID, &t.Name, &t.Type, &t.Status, &t.Locality, &t.PreviousLocality, &t.PrimaryZone); err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TenantByName reads the user tenant called name from DBA_OB_TENANTS; nil
// when there is none.
func TenantByName(ctx context.Context, db *sql.DB, name string) (*Tenant, error) {
	t := &Tenant{}
	err := db.QueryRowContext(ctx, "SELECT TENANT_ID, TENANT_NAME, STATUS, LOCALITY, PRIMARY_ZONE, TENANT_ROLE FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = ? AND TENANT_TYPE = 'USER'", name).
		Scan(&t.ID, &t.Name, &t.Status, &t.Locality, &t.PrimaryZone, &t.Role)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read tenant %s: %w", name, err)
	}
	return t, nil
}

// Pool is a row of DBA_OB_RESOURCE_POOLS, with its units' states.
type Pool struct {
	ID, TenantID, ConfigID int64 // TenantID 0: no tenant
	Name                   string
	UnitNum                int
	Zones                  []string
	ActiveUnits            int
}

// Pools lists the resource pools and counts their ACTIVE units.
func Pools(ctx context.Context, db *sql.DB) (map[string]*Pool, error) {
	rows, err := db.QueryContext(ctx, "SELECT RESOURCE_POOL_ID, NAME, TENANT_ID, UNIT_COUNT, UNIT_CONFIG_ID, ZONE_LIST FROM oceanbase.DBA_OB_RESOURCE_POOLS")
	if err != nil {
		return nil, fmt.Errorf("list resource pools: %w", err)
	}
	defer rows.Close()
	out := map[string]*Pool{}
	byID := map[int64]*Pool{}
	for rows.Next() {
		p := &Pool{}
		var tenant sql.NullInt64
		var zones string
		if err := rows.Scan(&p.ID, &p.Name, &tenant, &p.UnitNum, &p.ConfigID, &zones); err != nil {
			return nil, fmt.Errorf("list resource pools: %w", err)
		}
		p.TenantID = tenant.Int64
		p.Zones = strings.Split(zones, ";")
		out[p.Name], byID[p.ID] = p, p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list resource pools: %w", err)
	}
	units, err := db.QueryContext(ctx, "SELECT RESOURCE_POOL_ID FROM oceanbase.DBA_OB_UNITS WHERE STATUS = 'ACTIVE'")
	if err != nil {
		return nil, fmt.Errorf("list units: %w", err)
	}
	defer units.Close()
	for units.Next() {
		var id int64
		if err := units.Scan(&id); err != nil {
			return nil, fmt.Errorf("list units: %w", err)
		}
		if p := byID[id]; p != nil {
			p.ActiveUnits++
		}
	}
	return out, units.Err()
}

// UnitConfig is a resource unit config: CPUs, and sizes in bytes (LogDisk
// 0: OceanBase's default).
type UnitConfig struct {
	MaxCPU, MinCPU  float64
	Memory, LogDisk int64
}

func (u UnitConfig) options() string {
	opts := []string{
		"MAX_CPU " + strconv.FormatFloat(u.MaxCPU, 'f', -1, 64),
		"MIN_CPU " + strconv.FormatFloat(u.MinCPU, 'f', -1, 64),
		"MEMORY_SIZE " + quote(strconv.FormatInt(u.Memory, 10)),
	}
	if u.LogDisk > 0 {
		opts = append(opts, "LOG_DISK_SIZE "+quote(strconv.FormatInt(u.LogDisk, 10)))
	}
	return strings.Join(opts, ", ")
}

// UnitConfigs lists DBA_OB_UNIT_CONFIGS by name.
func UnitConfigs(ctx context.Context, db *sql.DB) (map[string]UnitConfig, error) {
	rows, err := db.QueryContext(ctx, "SELECT UNIT_CONFIG_ID, NAME, MAX_CPU, MIN_CPU, MEMORY_SIZE, LOG_DISK_SIZE FROM oceanbase.DBA_OB_UNIT_CONFIGS")
	if err != nil {
		return nil, fmt.Errorf("list unit configs: %w", err)
	}
	defer rows.Close()
	configs := map[string]UnitConfig{}
	for rows.Next() {
		var u UnitConfig
		var id int64
		var name string
		if err := rows.Scan(&id, &name, &u.MaxCPU, &u.MinCPU, &u.Memory, &u.LogDisk); err != nil {
			return nil, fmt.Errorf("list unit configs: %w", err)
		}
		configs[name] = u
	}
	return configs, rows.Err()
}

// CreateUnitConfig creates unit config name if it does not exist; an
// existing one is left as it is (AlterUnitConfig changes it).
func CreateUnitConfig(ctx context.Context, db *sql.DB, name string, u UnitConfig) error {
	if _, err := db.ExecContext(ctx, "CREATE RESOURCE UNIT IF NOT EXISTS "+name+" "+u.options()); err != nil {
		return fmt.Errorf("create unit config %s: %w", name, err)
	}
	return nil
}

// AlterUnitConfig sets unit config name to u.
func AlterUnitConfig(ctx context.Context, db *sql.DB, name string, u UnitConfig) error {
	if _, err := db.ExecContext(ctx, "ALTER RESOURCE UNIT "+name+" "+u.options()); err != nil {
		return fmt.Errorf("alter unit config %s: %w", name, err)
	}
	return nil
}

// CreatePool creates resource pool name in zone, of unitNum units of
// config unit, if it does not exist.
func CreatePool(ctx context.Context, db *sql.DB, name, unit string, unitNum int32, zone string) error {
	q := fmt.Sprintf("CREATE RESOURCE POOL IF NOT EXISTS %s UNIT = %s, UNIT_NUM = %d, ZONE_LIST = (%s)",
		name, quote(unit), unitNum, quote(zone))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("create resource pool %s: %w", name, err)
	}
	return nil
}

// SetPoolZones runs ALTER RESOURCE POOL name ZONE_LIST = (zones): OceanBase
// places the pool's units in a zone added (on that zone's servers) and
// drops those of a zone removed, which it refuses while the zone is in the
// locality of the pool's tenant.
func SetPoolZones(ctx context.Context, db *sql.DB, name string, zones []string) error {
	if !isIdent(name) {
		return fmt.Errorf("resource pool name %q is not an identifier", name)
	}
	if _, err := db.ExecContext(ctx, "ALTER RESOURCE POOL "+name+" ZONE_LIST = ("+quoteList(zones)+")"); err != nil {
		return fmt.Errorf("set the zones of resource pool %s: %w", name, err)
	}
	return nil
}

// TenantOptions are what CREATE TENANT sets.
type TenantOptions struct {
	Pools                          []string
	Locality, PrimaryZone, Charset string
	WhiteList                      string
}

// CreateTenant creates tenant name if it does not exist. OceanBase
// answers once the tenant is NORMAL, which takes about a minute.
func CreateTenant(ctx context.Context, db *sql.DB, name string, o TenantOptions) error {
	q := fmt.Sprintf("CREATE TENANT IF NOT EXISTS %s CHARSET = %s, PRIMARY_ZONE = %s, RESOURCE_POOL_LIST = (%s), LOCALITY = %s SET VARIABLES ob_tcp_invited_nodes = %s",
		name, quote(o.Charset), quote(o.PrimaryZone), quoteList(o.Pools), quote(o.Locality), quote(o.WhiteList))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("create tenant %s: %w", name, err)
	}
	return nil
}

// CreateStandbyTenant creates tenant name, if it does not exist, as a
// standby replaying the log of the primary that source names
// (LOG_RESTORE_SOURCE: 'SERVICE=ip:port[;ip:port] USER=user@tenant
// PASSWORD=...'). Its charset and variables are its primary's.
func CreateStandbyTenant(ctx context.Context, db *sql.DB, name, source string, o TenantOptions) error {
	q := fmt.Sprintf("CREATE STANDBY TENANT IF NOT EXISTS %s LOG_RESTORE_SOURCE = %s, PRIMARY_ZONE = %s, RESOURCE_POOL_LIST = (%s), LOCALITY = %s",
		name, quote(source), quote(o.PrimaryZone), quoteList(o.Pools), quote(o.Locality))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("create standby tenant %s: %w", name, err)
	}
	return nil
}

// AlterTenant runs ALTER TENANT name SET option = value, where option is
// LOCALITY, PRIMARY_ZONE or RESOURCE_POOL_LIST (value a list of pools).
func AlterTenant(ctx context.Context, db *sql.DB, name, option string, value ...string) error {
	v := quote(strings.Join(value, ""))
	if option == "RESOURCE_POOL_LIST" {
		v = "(" + quoteList(value) + ")"
	}
	if _, err := db.ExecContext(ctx, "ALTER TENANT "+name+" SET "+option+" = "+v); err != nil {
		return fmt.Errorf("set %s of tenant %s: %w", strings.ToLower(option), name, err)
	}
	return nil
}

// SetTenantVariable sets a global system variable of tenant name. A
// number is sent as a number (OceanBase, as MySQL, refuses a string for a
// numeric variable), anything else as a string.
func SetTenantVariable(ctx context.Context, db *sql.DB, name, variable, value string) error {
	if !isIdent(variable) {
		return fmt.Errorf("variable name %q is not an identifier", variable)
	}
	q, args := "ALTER TENANT "+name+" SET VARIABLES "+variable+" = ?", []any{value}
	if _, err := strconv.ParseFloat(value, 64); err == nil && !strings.ContainsAny(value, "eEnNxX") {
		q, args = "ALTER TENANT "+name+" SET VARIABLES "+variable+" = "+value, nil
	}
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("set %s of tenant %s: %w", variable, name, err)
	}
	return nil
}

// TenantVariables reads the tenant's global system variables from
// CDB_OB_SYS_VARIABLES (from sys), by name.
func TenantVariables(ctx context.Context, db *sql.DB, tenantID int64) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT NAME, VALUE FROM oceanbase.CDB_OB_SYS_VARIABLES WHERE TENANT_ID = ?", tenantID)
	if err != nil {
		return nil, fmt.Errorf("read the variables of tenant %d: %w", tenantID, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read the variables of tenant %d: %w", tenantID, err)
		}
		out[strings.ToLower(name)] = value.String
	}
	return out, rows.Err()
}

// SetUnitNum runs ALTER RESOURCE TENANT name UNIT_NUM = n: every pool of
// the tenant gets n units per zone.
func SetUnitNum(ctx context.Context, db *sql.DB, name string, n int32) error {
	if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER RESOURCE TENANT %s UNIT_NUM = %d", name, n)); err != nil {
		return fmt.Errorf("set the unit number of tenant %s: %w", name, err)
	}
	return nil
}

// LocalityJobRunning reports whether tenant id has a locality change in
// progress (DBA_OB_TENANT_JOBS).
func LocalityJobRunning(ctx context.Context, db *sql.DB, id int64) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM oceanbase.DBA_OB_TENANT_JOBS WHERE TENANT_ID = ? AND JOB_TYPE = 'ALTER_TENANT_LOCALITY' AND JOB_STATUS = 'INPROGRESS'", id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read the jobs of tenant %d: %w", id, err)
	}
	return n > 0, nil
}

// Drop runs DROP TENANT IF EXISTS name FORCE, DROP RESOURCE POOL name or
// DROP RESOURCE UNIT name, by kind ("TENANT", "RESOURCE POOL", "RESOURCE
// UNIT").
func Drop(ctx context.Context, db *sql.DB, kind, name string) error {
	q := "DROP " + kind + " " + name
	if kind == "TENANT" {
		q = "DROP TENANT IF EXISTS " + name + " FORCE"
	}
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("drop %s %s: %w", strings.ToLower(kind), name, err)
	}
	return nil
}

func quoteList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = quote(s)
	}
	return strings.Join(out, ", ")
}
