package obsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// ParameterRow is one server's row of a parameter in GV$OB_PARAMETERS.
type ParameterRow struct {
	Addr, Zone string // the server, ip:port, and its zone
	// Tenant is true for a tenant's parameter (TENANT_ID set, TenantID),
	// false for a cluster's.
	Tenant    bool
	TenantID  int64
	Value     string
	EditLevel string // DYNAMIC_EFFECTIVE, STATIC_EFFECTIVE, READONLY
}

// Parameter reads parameter name's rows from GV$OB_PARAMETERS: one per
// server for a cluster parameter, one per server and tenant for a
// tenant's; none for a name OceanBase does not know.
func Parameter(ctx context.Context, db *sql.DB, name string) ([]ParameterRow, error) {
	rows, err := db.QueryContext(ctx, "SELECT SVR_IP, SVR_PORT, ZONE, TENANT_ID, VALUE, EDIT_LEVEL FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = ?", name)
	if err != nil {
		return nil, fmt.Errorf("read parameter %s: %w", name, err)
	}
	defer rows.Close()
	var out []ParameterRow
	for rows.Next() {
		var r ParameterRow
		var ip string
		var port int
		var tenant sql.NullInt64
		if err := rows.Scan(&ip, &port, &r.Zone, &tenant, &r.Value, &r.EditLevel); err != nil {
			return nil, fmt.Errorf("read parameter %s: %w", name, err)
		}
		r.Addr, r.Tenant, r.TenantID = fmt.Sprintf("%s:%d", ip, port), tenant.Valid, tenant.Int64
		out = append(out, r)
	}
	return out, rows.Err()
}

// Scopes of a parameter's setting below the cluster's, and a tenant's.
const (
	ScopeZone   = "ZONE"
	ScopeServer = "SERVER"
	ScopeTenant = "TENANT"
)

// SetParameterIn runs ALTER SYSTEM SET name = value, for the whole cluster
// when scope is empty, else for one zone (scope ScopeZone, target the
// zone), one server (ScopeServer, target ip:port) or one tenant's
// parameter (ScopeTenant, target its name).
func SetParameterIn(ctx context.Context, db *sql.DB, name, value, scope, target string) error {
	if scope == "" {
		return SetParameter(ctx, db, name, value)
	}
	if !isIdent(name) {
		return fmt.Errorf("parameter name %q is not an identifier", name)
	}
	if scope != ScopeZone && scope != ScopeServer && scope != ScopeTenant {
		return fmt.Errorf("parameter scope %q is not %s, %s or %s", scope, ScopeZone, ScopeServer, ScopeTenant)
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET "+name+" = ? "+scope+" = ?", value, target); err != nil {
		return fmt.Errorf("set parameter %s in %s %s: %w", name, scope, target, err)
	}
	return nil
}

// Refused reports whether err is OceanBase's answer to a statement (an
// error packet), rather than a failure to reach it.
func Refused(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}
