package obsim

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Standby tenants, as OceanBase 4.x runs them (statements from sys):
//
//   - CREATE STANDBY TENANT name LOG_RESTORE_SOURCE = 'SERVICE=ip:port[;ip:port...]
//     USER=standbyro@primary PASSWORD=...', RESOURCE_POOL_LIST = (...), ...
//     makes a tenant with the role STANDBY that replays its primary's log
//     from the start, for ever (recovery until UNLIMITED); a restored
//     tenant (role STANDBY) replays from where its restore stopped once
//     ALTER SYSTEM SET LOG_RESTORE_SOURCE = '...' TENANT = name and
//     ALTER SYSTEM RECOVER STANDBY TENANT name UNTIL UNLIMITED|TIME=|SCN=
//     say from where and how far.
//   - ALTER SYSTEM SWITCHOVER TO STANDBY TENANT = p on the primary's
//     cluster makes it a read-only STANDBY; ALTER SYSTEM SWITCHOVER TO
//     PRIMARY TENANT = s on the standby's then makes s PRIMARY, once it
//     has replayed every commit of its source, which must be a STANDBY by
//     then (refused otherwise: the standby is not in sync).
//   - ALTER SYSTEM ACTIVATE STANDBY TENANT s (failover) makes s PRIMARY at
//     once, with what it has replayed.
//   - A restored standby may instead replay an archive:
//     LOG_RESTORE_SOURCE = 'LOCATION=<archive destination>' (TYPE
//     LOCATION in DBA_OB_LOG_RESTORE_SOURCE); it reads the archive's
//     pieces as the primary's archiving writes them, up to their
//     checkpoint. It has no primary to switch over with.
//
// Simulated: the standby's RootService reads the primary's commits over
// the MySQL protocol as the source's user, from an internal table of the
// simulator's own (__all_virtual_obsim_commit: scn and the commit as
// JSON) and the primary's current SCN (__all_virtual_obsim_gts), where
// OceanBase's standby fetches redo over its RPC.

// replayInterval is how often a standby reads its source.
const replayInterval = 500 * time.Millisecond

// maxSCN is OceanBase's maximum SCN: recovery until UNLIMITED, and the
// recovery_until_scn of a primary.
const maxSCN = math.MaxInt64 / 2

// LogSource is a standby tenant's LOG_RESTORE_SOURCE.
type LogSource struct {
	// Value is the source as set, password included (the simulator keeps
	// it, as OceanBase does).
	Value string `json:"value"`
	// UntilSCN is where recovery stops (maxSCN: UNLIMITED).
	UntilSCN int64 `json:"untilSCN"`
	// SyncSCN is the primary's SCN the standby has replayed up to.
	SyncSCN int64 `json:"syncSCN"`
	// Error is the last failure to read the source, "" after a success.
	Error string `json:"error,omitempty"`
}

// logSourceDSN reads 'SERVICE=ip:port[;ip:port] USER=user@tenant PASSWORD=pw'
// into the addresses, the login and the password.
func logSourceDSN(v string) (addrs []string, user, password string, err error) {
	for _, f := range strings.Fields(v) {
		k, val, _ := strings.Cut(f, "=")
		switch strings.ToUpper(k) {
		case "SERVICE":
			addrs = strings.Split(val, ";")
		case "USER":
			user = val
		case "PASSWORD":
			password = val
		}
	}
	if len(addrs) == 0 || addrs[0] == "" || !strings.Contains(user, "@") {
		return nil, "", "", fmt.Errorf("LOG_RESTORE_SOURCE is 'SERVICE=ip:port[;ip:port] USER=user@tenant PASSWORD=...'")
	}
	return addrs, user, password, nil
}

// logSourceLocation reads 'LOCATION=<archive destination>': the archive
// a standby replays, "" when value is not a LOCATION.
func logSourceLocation(v string) string {
	k, val, _ := strings.Cut(strings.TrimSpace(v), "=")
	if !strings.EqualFold(k, "LOCATION") {
		return ""
	}
	return val
}

// sourceType is DBA_OB_LOG_RESTORE_SOURCE.TYPE of a source.
func sourceType(v string) string {
	if logSourceLocation(v) != "" {
		return "LOCATION"
	}
	return "SERVICE"
}

// setLogSource runs ALTER SYSTEM SET LOG_RESTORE_SOURCE for t (n.mu held):
// a SERVICE (a primary's observers) or a LOCATION (an archive).
func (n *Node) setLogSource(t *Tenant, value string) (*result, *Error) {
	if t.role() == RolePrimary {
		return nil, notAllowed("tenant '%s' is PRIMARY: LOG_RESTORE_SOURCE is set for a standby", t.Name)
	}
	if loc := logSourceLocation(value); loc != "" {
		if _, err := parseDest(loc); err != nil {
			return nil, invalid("Invalid argument: LOCATION: %v", err)
		}
	} else if _, _, _, err := logSourceDSN(value); err != nil {
		return nil, invalid("Invalid argument: %v", err)
	}
	if t.Source == nil {
		t.Source = &LogSource{SyncSCN: t.RecoveryUntilSCN}
	}
	t.Source.Value, t.Source.Error = value, ""
	return &result{}, nil
}

// tenantOperand reads the end of a statement on one tenant: [=] name.
func tenantOperand(p *parser) (string, *Error) {
	p.punct('=')
	name, err := p.value()
	if err != nil {
		return "", err
	}
	return name, p.end()
}

// userTenant returns the user tenant name, or OceanBase's error for an
// unknown one.
func (s *State) userTenant(name string) (*Tenant, *Error) {
	t := s.tenantByName(name)
	if t == nil || t.Type != "USER" {
		return nil, missing("Unknown tenant '%s'", name)
	}
	return t, nil
}

// recoverStandby runs ALTER SYSTEM RECOVER STANDBY TENANT name UNTIL
// UNLIMITED|TIME = '...'|SCN = n (n.mu held).
func (n *Node) recoverStandby(p *parser) (*result, *Error) {
	p.punct('=')
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	if !p.keywords("UNTIL") {
		return nil, p.syntax()
	}
	until, err := untilClause(p, true)
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	t, err := n.state.userTenant(name)
	switch {
	case err != nil:
		return nil, err
	case t.role() != RoleStandby:
		return nil, notAllowed("tenant '%s' is %s, not STANDBY", name, t.role())
	case t.Source == nil:
		return nil, notAllowed("tenant '%s' has no LOG_RESTORE_SOURCE", name)
	case until < t.Source.SyncSCN:
		return nil, notAllowed("tenant '%s' has replayed past the recovery point", name)
	}
	t.Source.UntilSCN = until
	t.RecoveryUntilSCN = until
	return &result{}, nil
}

// untilClause reads UNLIMITED (when allowed), TIME = '...' or SCN = n.
func untilClause(p *parser, unlimited bool) (int64, *Error) {
	switch {
	case unlimited && p.keywords("UNLIMITED"):
		return maxSCN, nil
	case p.keywords("TIME"):
		p.punct('=')
		v, err := p.value()
		if err != nil {
			return 0, err
		}
		at, perr := time.Parse("2006-01-02 15:04:05.999999999", v)
		if perr != nil {
			return 0, invalid("Invalid argument: UNTIL TIME '%s' is not 'YYYY-MM-DD HH:MM:SS[.ffffff]'", v)
		}
		return at.UnixNano(), nil
	case p.keywords("SCN"):
		p.punct('=')
		v, err := p.value()
		if err != nil {
			return 0, err
		}
		scn, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || scn <= 0 {
			return 0, invalid("Invalid argument: UNTIL SCN %s", v)
		}
		return scn, nil
	}
	return 0, p.syntax()
}

// switchoverToStandby runs ALTER SYSTEM SWITCHOVER TO STANDBY TENANT [=]
// name on a primary (n.mu held): it takes no more writes.
func (n *Node) switchoverToStandby(p *parser) (*result, *Error) {
	name, err := tenantOperand(p)
	if err != nil {
		return nil, err
	}
	t, err := n.state.userTenant(name)
	switch {
	case err != nil:
		return nil, err
	case t.role() != RolePrimary:
		return nil, notAllowed("tenant '%s' is %s, not PRIMARY", name, t.role())
	}
	t.Role = RoleStandby
	t.RecoveryUntilSCN = maxSCN
	last := int64(0)
	if c := lastCommit(t); c != nil {
		last = c.SCN
	}
	t.Source = &LogSource{UntilSCN: maxSCN, SyncSCN: last}
	return &result{}, nil
}

// switchoverToPrimary runs ALTER SYSTEM SWITCHOVER TO PRIMARY TENANT [=]
// name on a standby: it reads its source once more, outside n.mu, and
// becomes PRIMARY only if the source is a standby whose every commit it has.
func (n *Node) switchoverToPrimary(ctx context.Context, p *parser) (*result, *Error) {
	name, perr := tenantOperand(p)
	if perr != nil {
		return nil, perr
	}
	n.mu.Lock()
	t, perr := n.state.userTenant(name)
	if perr != nil {
		n.mu.Unlock()
		return nil, perr
	}
	if t.role() != RoleStandby || t.Source == nil || t.Source.Value == "" {
		n.mu.Unlock()
		return nil, notAllowed("tenant '%s' is not a standby with a LOG_RESTORE_SOURCE", name)
	}
	if logSourceLocation(t.Source.Value) != "" {
		n.mu.Unlock()
		return nil, notAllowed("tenant '%s' replays an archive, which has no primary to switch with: activate it", name)
	}
	src, from := *t.Source, t.Source.SyncSCN
	n.mu.Unlock()
	fetched, err := fetchSource(ctx, n.dial, src.Value, from)
	if err != nil {
		return nil, notAllowed("cannot read the primary of tenant '%s': %v", name, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	t = n.state.tenantByName(name)
	if t == nil || t.Source == nil {
		return nil, missing("Unknown tenant '%s'", name)
	}
	n.replayed(t, fetched)
	if fetched.sourceRole != RoleStandby {
		return nil, notAllowed("tenant '%s' is not in sync: its primary is still %s (switch it to standby first)",
			name, fetched.sourceRole)
	}
	t.Role, t.Source, t.RecoveryUntilSCN = RolePrimary, nil, 0
	n.changed()
	return &result{}, nil
}

// fetched is what one read of a log source returned.
type fetched struct {
	commits []Commit
	// users are the source's users: a standby's are its primary's, as
	// OceanBase replays them with the rest of the tenant's schema.
	users      []User
	gts        int64 // the source's SCN when read: every commit up to it is in commits
	sourceRole string
}

// fetchSource reads, over the MySQL protocol, the source's commits after
// from and its users; dial maps a source address to the one to dial.
func fetchSource(ctx context.Context, dial func(string) string, value string, from int64) (fetched, error) {
	var out fetched
	if loc := logSourceLocation(value); loc != "" {
		return fetchArchive(ctx, loc, from)
	}
	addrs, user, password, err := logSourceDSN(value)
	if err != nil {
		return out, err
	}
	var errs []string
	for _, addr := range addrs {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", dial(addr), "oceanbase"
		cfg.InterpolateParams, cfg.Timeout = true, 2*time.Second
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return out, err
		}
		db := sql.OpenDB(connector)
		out, err = readSource(ctx, db, from)
		db.Close()
		if err == nil {
			return out, nil
		}
		errs = append(errs, addr+": "+err.Error())
	}
	return out, fmt.Errorf("%s", strings.Join(errs, "; "))
}

// fetchArchive reads an archive source: its commits after from, up to its
// checkpoint. An archive has no role and carries no users (a restored
// standby has its backup's).
func fetchArchive(ctx context.Context, location string, from int64) (fetched, error) {
	var out fetched
	a, err := readArchive(ctx, location)
	if err != nil {
		return out, err
	}
	slices.SortFunc(a.commits, func(x, y Commit) int { return int(x.SCN - y.SCN) })
	for _, c := range a.commits {
		if c.SCN > from && c.SCN <= a.checkpoint {
			out.commits = append(out.commits, c)
		}
	}
	out.gts = a.checkpoint
	return out, nil
}

func readSource(ctx context.Context, db *sql.DB, from int64) (fetched, error) {
	var out fetched
	if err := db.QueryRowContext(ctx, "SELECT gts, tenant_role FROM __all_virtual_obsim_gts").Scan(&out.gts, &out.sourceRole); err != nil {
		return out, err
	}
	users, err := db.QueryContext(ctx, "SELECT name, password, grants FROM __all_virtual_obsim_user")
	if err != nil {
		return out, err
	}
	for users.Next() {
		var u User
		if err := users.Scan(&u.Name, &u.Password, &u.Grants); err != nil {
			users.Close()
			return out, err
		}
		out.users = append(out.users, u)
	}
	users.Close()
	rows, err := db.QueryContext(ctx, "SELECT scn, body FROM __all_virtual_obsim_commit WHERE scn > ? ORDER BY scn", from)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var scn int64
		var body string
		if err := rows.Scan(&scn, &body); err != nil {
			return out, err
		}
		var c Commit
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			return out, err
		}
		if c.SCN <= out.gts {
			out.commits = append(out.commits, c)
		}
	}
	return out, rows.Err()
}

// replayed appends what was read from t's source, up to its recovery point
// (n.mu held).
func (n *Node) replayed(t *Tenant, f fetched) {
	src := t.Source
	changed := false
	for _, c := range f.commits {
		if c.SCN <= src.SyncSCN || c.SCN > src.UntilSCN {
			continue
		}
		if last := lastCommit(t); last != nil && c.SCN <= last.SCN {
			continue
		}
		t.Commits = append(t.Commits, c)
		src.SyncSCN, changed = c.SCN, true
	}
	if sync := min(f.gts, src.UntilSCN); sync > src.SyncSCN {
		src.SyncSCN, changed = sync, true
	}
	if src.Error != "" {
		src.Error, changed = "", true
	}
	if f.users != nil && n.replaceUsers(t.ID, f.users) {
		changed = true
	}
	if changed {
		n.changed()
	}
}

// replaceUsers gives tenant id the users given, and reports whether they
// differ from its own (n.mu held).
func (n *Node) replaceUsers(id int64, users []User) bool {
	s := n.state
	var own []User
	for _, u := range s.Users {
		if u.TenantID == id {
			own = append(own, *u)
		}
	}
	for i := range users {
		users[i].TenantID = id
	}
	if slices.Equal(own, users) {
		return false
	}
	s.Users = slices.DeleteFunc(s.Users, func(u *User) bool { return u.TenantID == id })
	for _, u := range users {
		s.Users = append(s.Users, &u)
	}
	return true
}

// sourceView answers the simulator's internal tables a standby reads its
// primary through (a user tenant's own rows).
func (s *State) sourceView(name string, tenantID int64) (table, bool) {
	t := s.tenantByID(tenantID)
	switch {
	case t == nil:
		return table{}, false
	case name == "__ALL_VIRTUAL_OBSIM_GTS":
		return table{cols: []string{"gts", "tenant_role"}, rows: [][]any{{time.Now().UnixNano(), t.role()}}}, true
	case name == "__ALL_VIRTUAL_OBSIM_USER":
		out := table{cols: []string{"name", "password", "grants"}}
		for _, u := range s.Users {
			if u.TenantID == tenantID {
				out.rows = append(out.rows, []any{u.Name, u.Password, u.Grants})
			}
		}
		return out, true
	case name == "__ALL_VIRTUAL_OBSIM_COMMIT":
		out := table{cols: []string{"scn", "body"}}
		for _, c := range t.Commits {
			b, _ := json.Marshal(c)
			out.rows = append(out.rows, []any{c.SCN, string(b)})
		}
		return out, true
	}
	return table{}, false
}

// logSourceView answers DBA_OB_LOG_RESTORE_SOURCE (and CDB_OB_ in sys).
func (s *State) logSourceView(name string, tenantID int64) (table, bool) {
	cdb := name == "CDB_OB_LOG_RESTORE_SOURCE"
	if !cdb && name != "DBA_OB_LOG_RESTORE_SOURCE" || cdb && tenantID != sysTenantID {
		return table{}, false
	}
	out := table{cols: []string{"tenant_id", "id", "type", "value", "recovery_until_scn"}}
	for _, t := range s.Tenants {
		if t.Source == nil || t.Source.Value == "" || (!cdb && t.ID != tenantID) {
			continue
		}
		out.rows = append(out.rows, []any{t.ID, int64(1), sourceType(t.Source.Value), t.Source.Value, t.Source.UntilSCN})
	}
	return out, true
}

// standbyWork is one standby tenant's source to read.
type standbyWork struct {
	tenantID int64
	source   string
	from     int64
}

// dueStandbys returns the standby tenants to read their sources (n.mu held).
func (n *Node) dueStandbys() []standbyWork {
	var out []standbyWork
	for _, t := range n.state.Tenants {
		if t.role() == RoleStandby && t.Status == TenantNormal && t.Source != nil && t.Source.Value != "" &&
			t.Source.SyncSCN < t.Source.UntilSCN {
			out = append(out, standbyWork{tenantID: t.ID, source: t.Source.Value, from: t.Source.SyncSCN})
		}
	}
	return out
}

// replay reads one standby's source and records what it read.
func (n *Node) replay(w standbyWork) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	f, err := fetchSource(ctx, n.dial, w.source, w.from)
	cancel()
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.state.tenantByID(w.tenantID)
	if !n.isRS || t == nil || t.Source == nil || t.Source.Value != w.source {
		return
	}
	if err != nil {
		if t.Source.Error != err.Error() {
			t.Source.Error = err.Error()
			n.log.Warn("Cannot read a standby tenant's log restore source", "tenant", t.Name, "err", err)
			n.changed()
		}
		return
	}
	n.replayed(t, f)
}
