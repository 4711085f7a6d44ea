package mosql

import (
	"context"
	"database/sql"
	"fmt"
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
		return fmt.Errorf("connect to CN %s as %s: %w", t.Addr, User, err)
	}
	return f(ctx, db)
}
