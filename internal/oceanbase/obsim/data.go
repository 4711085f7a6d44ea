package obsim

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// A user tenant's data: tables and rows that its users create, write and
// read over the MySQL protocol, so that a backup, an archive and a restore
// can be checked row by row.
//
// The tenant's committed transactions are the truth: an ordered log of
// Commits, each with its SCN and its statements, in the cluster's state
// (so it reaches every member with the heartbeat, and a new RootService has
// it, as a majority of OceanBase's replicas has every committed
// transaction). The RootService executes statements with an embedded SQL
// engine (go-mysql-server, in memory) built by replaying that log; a
// statement that fails leaves no commit, and the engine is rebuilt from the
// log, so that a half-applied statement leaves nothing behind.
//
// What is simulated, and how it differs from OceanBase: the engine is
// MySQL's dialect as go-mysql-server implements it, not OceanBase's; a
// transaction (BEGIN ... COMMIT) is kept by the node that holds the
// connection and committed as one Commit at COMMIT, so its statements
// answer "0 rows affected" and its reads do not see its own writes; NOW()
// and the like replay with the commit's time, RAND() does not replay.

// Commit is one committed transaction of a tenant's data.
type Commit struct {
	// SCN is OceanBase's system change number for the commit: nanoseconds
	// since the epoch, increasing.
	SCN  int64     `json:"scn"`
	Time time.Time `json:"time"`
	// DB is the database the statements ran in ("" for none).
	DB    string   `json:"db,omitempty"`
	Stmts []string `json:"stmts"`
}

// tenantEngine is the RootService's SQL engine for one tenant's data, as of
// the first applied commits of its log.
type tenantEngine struct {
	engine  *sqle.Engine
	dbs     *memory.DbProvider
	applied int   // commits replayed
	lastSCN int64 // the SCN of the last one: a different log rebuilds
}

// viewName matches the OceanBase views and internal tables the simulator
// answers itself (views.go); a SELECT naming none of them reads the
// tenant's data.
var viewName = regexp.MustCompile(`(?i)\b(DBA_OB_\w+|CDB_OB_\w+|GV\$\w+|V\$\w+|__ALL_\w+)\b`)

// isDataStatement reports whether a user tenant's statement is about its
// data rather than the cluster: not an OceanBase administrative statement,
// not user management, not a read of the simulator's views.
func isDataStatement(q string) bool {
	up := strings.ToUpper(strings.TrimSpace(q))
	switch {
	case strings.HasPrefix(up, "ALTER SYSTEM"), strings.HasPrefix(up, "ALTER TENANT"),
		strings.HasPrefix(up, "CREATE TENANT"), strings.HasPrefix(up, "DROP TENANT"),
		strings.HasPrefix(up, "CREATE RESOURCE"), strings.HasPrefix(up, "DROP RESOURCE"),
		strings.HasPrefix(up, "ALTER RESOURCE"), isUserStatement(q):
		return false
	case strings.HasPrefix(up, "SET"):
		return false // session variables
	case strings.HasPrefix(up, "SELECT"), strings.HasPrefix(up, "SHOW"):
		return !viewName.MatchString(q)
	}
	return true
}

// isRead reports a statement that changes nothing, which leaves no commit.
func isRead(q string) bool {
	f := strings.Fields(strings.ToUpper(q))
	if len(f) == 0 {
		return true
	}
	switch f[0] {
	case "SELECT", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "USE":
		return true
	}
	return false
}

// txnControl classifies transaction statements: begin, commit, rollback or
// "" for any other.
func txnControl(q string) string {
	f := strings.Fields(strings.ToUpper(strings.TrimRight(strings.TrimSpace(q), ";")))
	switch {
	case len(f) == 1 && f[0] == "BEGIN", len(f) >= 2 && f[0] == "START" && f[1] == "TRANSACTION":
		return "begin"
	case len(f) >= 1 && f[0] == "COMMIT":
		return "commit"
	case len(f) >= 1 && f[0] == "ROLLBACK":
		return "rollback"
	}
	return ""
}

// connState is what a node keeps per client connection (mysql.Conn's
// ClientData): the current database, an open transaction's statements, and
// the backup passwords of its SET ENCRYPTION and SET DECRYPTION
// (encryption.go).
type connState struct {
	db         string
	inTxn      bool
	txn        []string
	encryption string   // the password of the backups it starts; "" none
	decryption []string // the passwords its restores may open sets with
}

func connOf(c *mysql.Conn) *connState {
	if s, ok := c.ClientData.(*connState); ok {
		return s
	}
	s := &connState{}
	c.ClientData = s
	return s
}

// dataRequest is a tenant data statement, or a transaction's statements,
// on its way to the RootService.
type dataRequest struct {
	DB    string   `json:"db,omitempty"`
	Stmts []string `json:"stmts"`
}

// execData runs a user tenant's data statements on the RootService (n.mu
// held): one read, or writes committed together. It returns the last
// statement's result and, for writes, the database the connection is in
// afterwards (a USE among them).
func (n *Node) execData(t *Tenant, req dataRequest) (*result, *Error) {
	if t.role() != RolePrimary && slices.ContainsFunc(req.Stmts, func(q string) bool { return !isRead(q) }) {
		return nil, errorf(codeNotAllowed, "tenant '%s' is a %s tenant: read only", t.Name, t.role())
	}
	te, err := n.engineFor(t)
	if err != nil {
		return nil, err
	}
	// The commit's SCN and time are taken first: NOW() answers that time,
	// as it will when the commit is replayed.
	scn := time.Now().UnixNano()
	if last := lastCommit(t); last != nil && scn <= last.SCN {
		scn = last.SCN + 1
	}
	at := time.Unix(0, scn).UTC()
	ctx := te.context(req.DB, at)
	var res *result
	writes := false
	for _, q := range req.Stmts {
		if res, err = runSQL(ctx, te.engine, q); err != nil {
			if writes {
				delete(n.engines, t.ID) // undo the transaction's earlier statements
			}
			return nil, err
		}
		writes = writes || !isRead(q)
	}
	if !writes {
		return res, nil
	}
	t.Commits = append(t.Commits, Commit{SCN: scn, Time: at, DB: req.DB, Stmts: req.Stmts})
	te.applied, te.lastSCN = len(t.Commits), scn
	n.changed()
	return res, nil
}

func lastCommit(t *Tenant) *Commit {
	if len(t.Commits) == 0 {
		return nil
	}
	return &t.Commits[len(t.Commits)-1]
}

// engineFor returns the tenant's engine, brought up to date with its log:
// built afresh when this node has none, or one that replayed another log
// (a RootService that lost its place and came back).
func (n *Node) engineFor(t *Tenant) (*tenantEngine, *Error) {
	te := n.engines[t.ID]
	if te != nil && (te.applied > len(t.Commits) || (te.applied > 0 && t.Commits[te.applied-1].SCN != te.lastSCN)) {
		te = nil
	}
	if te == nil {
		dbs := memory.NewDBProvider()
		te = &tenantEngine{engine: sqle.NewDefault(dbs), dbs: dbs}
		if n.engines == nil {
			n.engines = map[int64]*tenantEngine{}
		}
		n.engines[t.ID] = te
	}
	for ; te.applied < len(t.Commits); te.applied++ {
		c := t.Commits[te.applied]
		ctx := te.context(c.DB, c.Time)
		for _, q := range c.Stmts {
			if _, err := runSQL(ctx, te.engine, q); err != nil {
				delete(n.engines, t.ID)
				return nil, errorf(codeInternal, "replaying commit %d of tenant %s: %s: %s", c.SCN, t.Name, q, err.Msg)
			}
		}
		te.lastSCN = c.SCN
	}
	return te, nil
}

// context is a session of the engine in database db, at time now (NOW()
// and the like).
func (te *tenantEngine) context(db string, now time.Time) *sql.Context {
	ctx := sql.NewContext(context.Background(), sql.WithSession(memory.NewSession(sql.NewBaseSession(), te.dbs)))
	ctx.SetCurrentDatabase(db)
	ctx.SetQueryTime(now)
	return ctx
}

// runSQL runs one statement and returns its rows or the rows it changed.
func runSQL(ctx *sql.Context, e *sqle.Engine, q string) (*result, *Error) {
	schema, iter, _, err := e.Query(ctx, q)
	if err != nil {
		return nil, sqlErr(err)
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	if err != nil {
		return nil, sqlErr(err)
	}
	if len(schema) == 0 || types.IsOkResultSchema(schema) {
		res := &result{}
		if len(rows) == 1 && types.IsOkResult(rows[0]) {
			res.Affected = types.GetOkResult(rows[0]).RowsAffected
		}
		return res, nil
	}
	res := &result{Fields: []string{}, Types: []string{}}
	for _, col := range schema {
		res.Fields = append(res.Fields, col.Name)
		res.Types = append(res.Types, typeCodeOf(col.Type))
	}
	for _, row := range rows {
		out := make([]*string, len(row))
		for i, v := range row {
			if v == nil {
				continue
			}
			val, err := schema[i].Type.SQL(ctx, nil, v)
			if err != nil {
				return nil, sqlErr(err)
			}
			s := val.ToString()
			out[i] = &s
		}
		res.Rows = append(res.Rows, out)
	}
	return res, nil
}

// typeCodeOf maps a column type to the result's type code.
func typeCodeOf(t sql.Type) string {
	switch {
	case types.IsInteger(t):
		return "i"
	case types.IsFloat(t) || types.IsDecimal(t):
		return "f"
	case types.IsTime(t):
		return "t"
	}
	return "s"
}

// sqlErr carries the engine's MySQL error code to the client when it has
// one.
func sqlErr(err error) *Error {
	se := sql.CastSQLError(err)
	return &Error{Code: se.Num, State: se.State, Msg: se.Message}
}

// dataQuery runs a user tenant's data statement: BEGIN, COMMIT and
// ROLLBACK here, a transaction's writes kept until its COMMIT, the rest on
// the RootService.
func (n *Node) dataQuery(ctx context.Context, c *mysql.Conn, sess session, q string) (*result, *Error) {
	cs := connOf(c)
	switch txnControl(q) {
	case "begin": // as in MySQL, BEGIN first commits an open transaction
		res, err := n.commitTxn(ctx, sess, cs)
		cs.inTxn = true
		return res, err
	case "commit":
		return n.commitTxn(ctx, sess, cs)
	case "rollback":
		cs.inTxn, cs.txn = false, nil
		return &result{}, nil
	}
	if cs.inTxn && !isRead(q) {
		cs.txn = append(cs.txn, q)
		return &result{}, nil
	}
	res, err := n.onRootService(ctx, execRequest{Session: sess, Data: &dataRequest{DB: cs.db, Stmts: []string{q}}})
	if db, ok := useTarget(q); ok && err == nil {
		cs.db = db
	}
	return res, err
}

// commitTxn commits the connection's open transaction, if it has writes.
func (n *Node) commitTxn(ctx context.Context, sess session, cs *connState) (*result, *Error) {
	stmts := cs.txn
	cs.inTxn, cs.txn = false, nil
	if len(stmts) == 0 {
		return &result{}, nil
	}
	return n.onRootService(ctx, execRequest{Session: sess, Data: &dataRequest{DB: cs.db, Stmts: stmts}})
}

// useTarget returns the database a USE statement names.
func useTarget(q string) (string, bool) {
	f := strings.Fields(strings.TrimRight(strings.TrimSpace(q), ";"))
	if len(f) != 2 || !strings.EqualFold(f[0], "USE") {
		return "", false
	}
	db := f[1]
	if strings.HasPrefix(db, "`") && strings.HasSuffix(db, "`") && len(db) >= 2 {
		db = strings.ReplaceAll(db[1:len(db)-1], "``", "`")
	}
	return db, true
}

// execDataRequest runs data statements on the RootService and, when they
// committed, acknowledges them once the members have the commit.
func (n *Node) execDataRequest(sess session, req dataRequest) (*result, *Error) {
	n.mu.Lock()
	t := n.state.tenantByName(sess.Tenant)
	if t == nil || t.Type != "USER" || t.Status != TenantNormal {
		n.mu.Unlock()
		return nil, missing("Unknown tenant '%s'", sess.Tenant)
	}
	before := len(t.Commits)
	res, err := n.execData(t, req)
	committed := len(t.Commits) > before
	n.mu.Unlock()
	if committed {
		n.heartbeat(time.Now())
	}
	return res, err
}
