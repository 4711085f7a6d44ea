package obsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Login is who connects: a user of a tenant ("sys" for the cluster's).
type Login struct {
	User, Tenant, Password string
}

// SQLPort is the observers' MySQL port.
const SQLPort = 2881

// Open connects to the observer at host (an IP or name; port SQLPort)
// and checks the login. Statements run with interpolated arguments (the
// observer's administrative statements cannot be prepared), and time out
// after timeout. Close the DB when done.
func Open(ctx context.Context, host string, login Login, timeout time.Duration) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User = login.User
	if login.Tenant != "" && login.Tenant != "sys" {
		cfg.User += "@" + login.Tenant
	}
	cfg.Passwd = login.Password
	cfg.Net = "tcp"
	cfg.Addr = fmt.Sprintf("%s:%d", host, SQLPort)
	cfg.InterpolateParams = true
	cfg.Timeout = 3 * time.Second
	cfg.ReadTimeout = timeout
	cfg.WriteTimeout = timeout
	cfg.AllowNativePasswords = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s as %s: %w", cfg.Addr, cfg.User, err)
	}
	return db, nil
}

// Server is a row of DBA_OB_SERVERS.
type Server struct {
	Addr         string // ip:port
	Zone         string
	Status       string // ACTIVE, INACTIVE, DELETING
	StartService *time.Time
	RootService  bool
	BuildVersion string
}

// Serving reports whether the server is ACTIVE and has started serving.
func (s Server) Serving() bool { return s.Status == "ACTIVE" && s.StartService != nil }

// Servers lists DBA_OB_SERVERS.
func Servers(ctx context.Context, db *sql.DB) ([]Server, error) {
	rows, err := db.QueryContext(ctx, "SELECT SVR_IP, SVR_PORT, ZONE, STATUS, START_SERVICE_TIME, WITH_ROOTSERVER, BUILD_VERSION FROM oceanbase.DBA_OB_SERVERS")
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	defer rows.Close()
	var out []Server
	for rows.Next() {
		var s Server
		var ip, rs string
		var port int
		var start sql.NullString
		if err := rows.Scan(&ip, &port, &s.Zone, &s.Status, &start, &rs, &s.BuildVersion); err != nil {
			return nil, fmt.Errorf("list servers: %w", err)
		}
		s.Addr = fmt.Sprintf("%s:%d", ip, port)
		s.RootService = strings.EqualFold(rs, "YES")
		if start.Valid {
			t, err := time.Parse("2006-01-02 15:04:05.999999", start.String)
			if err != nil {
				return nil, fmt.Errorf("list servers: start_service_time %q: %w", start.String, err)
			}
			s.StartService = &t
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Zone is a row of DBA_OB_ZONES.
type Zone struct{ Name, Status string }

// Zones lists DBA_OB_ZONES.
func Zones(ctx context.Context, db *sql.DB) ([]Zone, error) {
	rows, err := db.QueryContext(ctx, "SELECT ZONE, STATUS FROM oceanbase.DBA_OB_ZONES")
	if err != nil {
		return nil, fmt.Errorf("list zones: %w", err)
	}
	defer rows.Close()
	var out []Zone
	for rows.Next() {
		var z Zone
		if err := rows.Scan(&z.Name, &z.Status); err != nil {
			return nil, fmt.Errorf("list zones: %w", err)
		}
		out = append(out, z)
	}
	return out, rows.Err()
}

// BootstrapMember is one zone's first server in a bootstrap.
type BootstrapMember struct{ Zone, Addr string }

// Bootstrap runs ALTER SYSTEM BOOTSTRAP with one server per zone. It
// takes as long as the bootstrap (minutes on OceanBase).
func Bootstrap(ctx context.Context, db *sql.DB, members []BootstrapMember) error {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = fmt.Sprintf("ZONE %s SERVER %s", quote(m.Zone), quote(m.Addr))
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM BOOTSTRAP "+strings.Join(parts, ", ")); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

// EnsureUser creates user (if absent) with password, sets the password
// (when it existed), and grants it privileges ("ALL PRIVILEGES" or
// "SELECT") on everything.
func EnsureUser(ctx context.Context, db *sql.DB, user, password, privileges string) error {
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS " + quote(user) + " IDENTIFIED BY ?",
		"ALTER USER " + quote(user) + " IDENTIFIED BY ?",
	} {
		if _, err := db.ExecContext(ctx, q, password); err != nil {
			return fmt.Errorf("user %s: %w", user, err)
		}
	}
	if _, err := db.ExecContext(ctx, "GRANT "+privileges+" ON *.* TO "+quote(user)); err != nil {
		return fmt.Errorf("grant %s to %s: %w", privileges, user, err)
	}
	return nil
}

// SetPassword sets user's password.
func SetPassword(ctx context.Context, db *sql.DB, user, password string) error {
	if _, err := db.ExecContext(ctx, "ALTER USER "+quote(user)+" IDENTIFIED BY ?", password); err != nil {
		return fmt.Errorf("set the password of %s: %w", user, err)
	}
	return nil
}

// AddServer runs ALTER SYSTEM ADD SERVER addr ZONE zone.
func AddServer(ctx context.Context, db *sql.DB, addr, zone string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM ADD SERVER ? ZONE ?", addr, zone); err != nil {
		return fmt.Errorf("add server %s to zone %s: %w", addr, zone, err)
	}
	return nil
}

// DeleteServer runs ALTER SYSTEM DELETE SERVER addr ZONE zone: OceanBase
// moves the server's units away, then forgets it.
func DeleteServer(ctx context.Context, db *sql.DB, addr, zone string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM DELETE SERVER ? ZONE ?", addr, zone); err != nil {
		return fmt.Errorf("delete server %s: %w", addr, err)
	}
	return nil
}

// SetParameter runs ALTER SYSTEM SET name = value (cluster scope).
func SetParameter(ctx context.Context, db *sql.DB, name, value string) error {
	if !isIdent(name) {
		return fmt.Errorf("parameter name %q is not an identifier", name)
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET "+name+" = ?", value); err != nil {
		return fmt.Errorf("set parameter %s: %w", name, err)
	}
	return nil
}

// ParameterValues returns a cluster parameter's value on each server
// (ip:port), from GV$OB_PARAMETERS.
func ParameterValues(ctx context.Context, db *sql.DB, name string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT SVR_IP, SVR_PORT, VALUE FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = ? AND TENANT_ID IS NULL", name)
	if err != nil {
		return nil, fmt.Errorf("read parameter %s: %w", name, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ip, value string
		var port int
		if err := rows.Scan(&ip, &port, &value); err != nil {
			return nil, fmt.Errorf("read parameter %s: %w", name, err)
		}
		out[fmt.Sprintf("%s:%d", ip, port)] = value
	}
	return out, rows.Err()
}

// quote writes s as a single-quoted SQL string.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		digit := i > 0 && r >= '0' && r <= '9'
		if !letter && !digit {
			return false
		}
	}
	return true
}

// AlterZone runs ALTER SYSTEM verb ZONE zone, verb one of START, STOP
// (OceanBase refuses it when a tenant would lose its majority), ADD and
// DELETE.
func AlterZone(ctx context.Context, db *sql.DB, verb, zone string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM "+verb+" ZONE ?", zone); err != nil {
		return fmt.Errorf("%s zone %s: %w", strings.ToLower(verb), zone, err)
	}
	return nil
}
