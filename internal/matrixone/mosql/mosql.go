package mosql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// User is the sys account's administrator, whose password the CNs take
// from DEFAULT_PASSWORD when they bootstrap the catalog.
const User = "root"

// WorkState is a CN's work state as mo_ctl sets it.
type WorkState int

const (
	// Working means the proxy sends new sessions to the CN.
	Working WorkState = 1
	// Draining means the proxy sends no new sessions and moves the CN's
	// sessions to Working CNs, each between two statements.
	Draining WorkState = 2
)

// Target is where an administrative statement goes: a CN's SQL address
// (host:port) and root's password.
type Target struct {
	Addr, Password string
}

// Admin runs the administrative statements of a CNSet's controller. The
// controller holds it as an interface so that envtests, with no CN to
// reach, can stand in for MatrixOne.
type Admin interface {
	// SetWorkState sets the work state of the CN store uuid, through the
	// CN at t.
	SetWorkState(ctx context.Context, t Target, uuid string, state WorkState) error
	// Sessions counts the client sessions the CN store uuid holds that the
	// proxy can move (Session.Movable), asking through the CN at t; the
	// session asking is not one of them.
	Sessions(ctx context.Context, t Target, uuid string) (int, error)
	// GlobalCheckpoint forces the TN to write a global checkpoint, asking
	// through the CN at t, and returns once it is written.
	GlobalCheckpoint(ctx context.Context, t Target) error
	// Serving checks that the CN at t reads the catalog (through the TN's
	// logtail): it answers a count of mo_catalog's tables.
	Serving(ctx context.Context, t Target) error
}

// ErrNotSent marks an error returned before the statement was sent (the
// CN could not be reached, or a name is not one MatrixOne takes): the
// statement had no effect and can be sent again.
var ErrNotSent = errors.New("the statement was not sent")

// Client is the Admin of a real MatrixOne: one connection per call, as
// root, each call bounded by Timeout (default 10 s).
type Client struct {
	Timeout time.Duration
}

var _ Admin = Client{}

// SetWorkState runs mo_ctl('cn','workstate','<uuid>:<state>'); HAKeeper
// records it and the proxies read it every few seconds.
func (c Client) SetWorkState(ctx context.Context, t Target, uuid string, state WorkState) error {
	return c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		var out string
		arg := fmt.Sprintf("%s:%d", uuid, state)
		if err := db.QueryRowContext(ctx, "select mo_ctl('cn', 'workstate', ?)", arg).Scan(&out); err != nil {
			return fmt.Errorf("set the work state of CN %s to %d: %w", uuid, state, err)
		}
		return nil
	})
}

// GlobalCheckpoint runs mo_ctl('dn', 'globalcheckpoint', ”). A restore
// needs it before the restored cluster takes writes: a global checkpoint
// restored from a backup keeps the source's WAL position, and a TN
// restarted later would skip the new WAL entries below it
// (docs/design/matrixone-data.md); a forced one records position 0.
//
// It runs until ctx ends (the caller bounds it), not Timeout: a global
// checkpoint writes every table's data not yet in one.
func (c Client) GlobalCheckpoint(ctx context.Context, t Target) error {
	if deadline, ok := ctx.Deadline(); ok {
		c.Timeout = max(c.Timeout, time.Until(deadline))
	}
	return c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		var out string
		if err := db.QueryRowContext(ctx, "select mo_ctl('dn', 'globalcheckpoint', '')").Scan(&out); err != nil {
			return fmt.Errorf("force a global checkpoint: %w", err)
		}
		return nil
	})
}

// Serving counts mo_catalog.mo_tables' rows.
func (c Client) Serving(ctx context.Context, t Target) error {
	return c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		var n int
		if err := db.QueryRowContext(ctx, "select count(*) from mo_catalog.mo_tables").Scan(&n); err != nil {
			return fmt.Errorf("read the catalog: %w", err)
		}
		return nil
	})
}

// Session is a row of processlist(), the columns the drain reads.
type Session struct {
	// User and DB are the session's user and current database.
	User, DB string
	// ProxyHost is the address of the proxy the session came through;
	// empty for a connection straight to the CN.
	ProxyHost string
}

// Movable reports whether the proxy can move s to another CN: it came
// through a proxy. A CN sets proxy_host only on a session whose
// connection began with a proxy's handshake (MatrixOne 1.2.4,
// frontend.MysqlProtocolImpl receiving proxy.ExtraInfo), and a proxy moves
// only the sessions it carries. MatrixOne's own connections go straight to
// a CN's SQL address, which they take from HAKeeper, and never move: the
// system log and statement writers of every node (user mo_logger, for the
// connection's life), the task service's storage (HAKeeper's task user, in
// database mo_task), a proxy's own queries, and the operator's
// administrative statements. A drain that counted them would never end
// before its timeout.
func (s Session) Movable() bool { return s.ProxyHost != "" }

// Sessions counts the sessions of processlist() on the CN store uuid that
// the proxy can move (Session.Movable): the ones a drain waits for.
func (c Client) Sessions(ctx context.Context, t Target, uuid string) (int, error) {
	var n int
	err := c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		const query = "select user, db, proxy_host from processlist() p where p.node_id = ?"
		rows, err := db.QueryContext(ctx, query, uuid)
		if err != nil {
			return fmt.Errorf("list the sessions of CN %s: %w", uuid, err)
		}
		defer rows.Close()
		for rows.Next() {
			var user, database, proxy sql.NullString
			if err := rows.Scan(&user, &database, &proxy); err != nil {
				return fmt.Errorf("read a session of CN %s: %w", uuid, err)
			}
			s := Session{User: user.String, DB: database.String, ProxyHost: proxy.String}
			if s.Movable() {
				n++
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list the sessions of CN %s: %w", uuid, err)
		}
		return nil
	})
	return n, err
}

func (c Client) with(ctx context.Context, t Target, f func(context.Context, *sql.DB) error) error {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.User = User
	cfg.Passwd = t.Password
	cfg.Net = "tcp"
	cfg.Addr = t.Addr
	// mo_ctl cannot be prepared; arguments are interpolated (escaped)
	// by the driver.
	cfg.InterpolateParams = true
	cfg.Timeout = timeout
	cfg.ReadTimeout = timeout
	cfg.WriteTimeout = timeout
	cfg.AllowNativePasswords = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connect to CN %s as %s: %w: %w", t.Addr, User, ErrNotSent, err)
	}
	return f(ctx, db)
}

// SnapshotInfo is a snapshot as mo_catalog.mo_snapshots records it.
type SnapshotInfo struct {
	// Name is the snapshot's name; Level is "account" or "cluster";
	// Account is the account of an account snapshot.
	Name, Level, Account string
	// TS is the snapshot's point in time, nanoseconds since the Unix
	// epoch (the CN's clock when it was taken).
	TS int64
}

// Time is the snapshot's point in time.
func (s SnapshotInfo) Time() time.Time { return time.Unix(0, s.TS).UTC() }

// Snapshots runs the statements of account snapshots: MatrixOne 1.2.4's
// CREATE SNAPSHOT, DROP SNAPSHOT and RESTORE ACCOUNT ... FROM SNAPSHOT,
// as root of the sys account. The controllers hold it as an interface so
// that envtests, with no CN to reach, can stand in for MatrixOne.
type Snapshots interface {
	// CreateSnapshot takes the snapshot name of account.
	CreateSnapshot(ctx context.Context, t Target, name, account string) error
	// GetSnapshot returns the snapshot name; nil when there is none.
	GetSnapshot(ctx context.Context, t Target, name string) (*SnapshotInfo, error)
	// DropSnapshot drops the snapshot name, if there is one.
	DropSnapshot(ctx context.Context, t Target, name string) error
	// AccountExists reports whether the account exists.
	AccountExists(ctx context.Context, t Target, account string) (bool, error)
	// RestoreAccount restores account's databases from the snapshot into
	// target (account itself when target is empty), in one transaction,
	// returning once it committed. It runs until ctx ends, not Timeout.
	RestoreAccount(ctx context.Context, t Target, account, snapshot, target string) error
}

var _ Snapshots = Client{}

// ident quotes a name as a MatrixOne identifier. Snapshot and account
// names take no quote, space or backquote (MatrixOne refuses them); the
// API keeps them to letters, digits, '_', '-' (accounts) and '.'
// (Snapshots, named as Kubernetes objects are).
func ident(name string) (string, error) {
	taken := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
	}
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return !taken(r) }) {
		return "", fmt.Errorf("%q is not a name MatrixOne takes", name)
	}
	return "`" + name + "`", nil
}

// exec runs a statement built from quoted names.
func (c Client) exec(ctx context.Context, t Target, what, format string, names ...string) error {
	args := make([]any, len(names))
	for i, n := range names {
		q, err := ident(n)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", what, ErrNotSent, err)
		}
		args[i] = q
	}
	return c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(format, args...)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// CreateSnapshot runs CREATE SNAPSHOT name FOR ACCOUNT account.
func (c Client) CreateSnapshot(ctx context.Context, t Target, name, account string) error {
	return c.exec(ctx, t, "create the snapshot "+name, "create snapshot %s for account %s", name, account)
}

// DropSnapshot runs DROP SNAPSHOT IF EXISTS name.
func (c Client) DropSnapshot(ctx context.Context, t Target, name string) error {
	return c.exec(ctx, t, "drop the snapshot "+name, "drop snapshot if exists %s", name)
}

// RestoreAccount runs RESTORE ACCOUNT account FROM SNAPSHOT snapshot [TO
// ACCOUNT target].
func (c Client) RestoreAccount(ctx context.Context, t Target, account, snapshot, target string) error {
	if deadline, ok := ctx.Deadline(); ok {
		c.Timeout = max(c.Timeout, time.Until(deadline))
	}
	what := fmt.Sprintf("restore the account %s from the snapshot %s", account, snapshot)
	if target == "" || target == account {
		return c.exec(ctx, t, what, "restore account %s from snapshot %s", account, snapshot)
	}
	return c.exec(ctx, t, what+" into the account "+target, "restore account %s from snapshot %s to account %s", account, snapshot, target)
}

// GetSnapshot reads the snapshot's row of mo_catalog.mo_snapshots.
func (c Client) GetSnapshot(ctx context.Context, t Target, name string) (*SnapshotInfo, error) {
	var s *SnapshotInfo
	err := c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		const query = "select sname, ts, level, account_name from mo_catalog.mo_snapshots where sname = ?"
		var got SnapshotInfo
		var account sql.NullString
		switch err := db.QueryRowContext(ctx, query, name).Scan(&got.Name, &got.TS, &got.Level, &account); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("read the snapshot %s: %w", name, err)
		}
		got.Account = account.String
		s = &got
		return nil
	})
	return s, err
}

// AccountExists reads mo_catalog.mo_account.
func (c Client) AccountExists(ctx context.Context, t Target, account string) (bool, error) {
	var n int
	err := c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		const query = "select count(*) from mo_catalog.mo_account where lower(account_name) = lower(?)"
		if err := db.QueryRowContext(ctx, query, account).Scan(&n); err != nil {
			return fmt.Errorf("read the account %s: %w", account, err)
		}
		return nil
	})
	return n > 0, err
}

// MatrixOne's error codes (pkg/common/moerr) raised before a transaction
// commits, which a second run may not meet: the lock service's tables
// moved (after a TN or CN restart), a conflict, a deadlock. (Not a closed
// backend: that may come after a commit was sent.)
var transientCodes = map[uint16]bool{
	20619: true, // ErrTxnWWConflict
	20628: true, // ErrTxnNeedRetry
	20631: true, // ErrTxnNeedRetryWithDefChanged
	20701: true, // ErrDeadLockDetected
	20702: true, // ErrLockTableBindChanged
	20703: true, // ErrLockTableNotFound
	20706: true, // ErrLockConflict
}

// Refused reports whether err is MatrixOne's answer to a statement (an
// error packet), so that the statement's transaction did not commit; and
// whether the error is one that a second run may not meet (transient). A
// lost connection or a timeout is neither: the statement may have
// committed.
func Refused(err error) (refused, transient bool) {
	var my *mysql.MySQLError
	if !errors.As(err, &my) {
		return false, false
	}
	return true, transientCodes[my.Number]
}
