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
	// Sessions counts the client sessions the CN store uuid holds, asking
	// through the CN at t, whose own session (the one asking) is not
	// counted unless t is that CN.
	Sessions(ctx context.Context, t Target, uuid string) (int, error)
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

// Sessions counts the rows of processlist() whose node_id is uuid, but
// for the task service's: MatrixOne's task runners connect to every CN
// as SQL clients of database mo_task, for the CN's life, and never move.
func (c Client) Sessions(ctx context.Context, t Target, uuid string) (int, error) {
	var n int
	err := c.with(ctx, t, func(ctx context.Context, db *sql.DB) error {
		const query = "select count(*) from processlist() p where p.node_id = ? and (p.db is null or p.db <> 'mo_task')"
		if err := db.QueryRowContext(ctx, query, uuid).Scan(&n); err != nil {
			return fmt.Errorf("count the sessions of CN %s: %w", uuid, err)
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
