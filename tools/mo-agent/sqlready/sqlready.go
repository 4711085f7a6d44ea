// Package sqlready tells whether a MatrixOne CN or proxy serves SQL: a
// client connects, completes the MySQL handshake and runs a statement. It
// is the readiness probe of the CN and proxy pods (mo-agent sql-ready),
// which accepted TCP connections long before they answered: after a TN
// restart, a proxy accepted connections for about 15 s and finished no
// handshake.
//
// A MatrixOne CN answers a login only after reading its catalog
// (mo_catalog's accounts, users and roles, each in a transaction, which
// waits for the TN's logtail): a refused login (MySQL error 1045, which
// MatrixOne sends only once it has read the user's password) is as much
// an answer as an accepted one. So a password the probe holds that is no
// longer root's (changed with ALTER USER, the Secret not updated) still
// finds a serving CN ready, and says so; it never takes every CN and
// proxy out of their Services.
package sqlready

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErAccessDenied is MySQL's error 1045, MatrixOne's answer to a refused
// login.
const ErAccessDenied = 1045

// Result is what a check found when the server answered.
type Result struct {
	// Refused is set when the server completed the handshake and refused
	// the login (error 1045); the statement did not run.
	Refused bool
	// Message is the server's refusal.
	Message string
}

func (r Result) String() string {
	if r.Refused {
		return "handshake completed, login refused (" + r.Message + "): the server read its catalog"
	}
	return "served: handshake completed, select 1 answered"
}

// Check connects to addr (host:port) as user, completes the handshake and
// runs "select 1", all within timeout. It returns an error when the server
// did not answer in time, closed the connection, or answered with an
// error other than a refused login.
func Check(ctx context.Context, addr, user, password string, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, user, password
	// The context's deadline covers the handshake and the statement; the
	// I/O deadlines are a backstop a little behind it.
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = timeout, timeout+time.Second, timeout+time.Second
	cfg.Logger = quiet{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return Result{}, err
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == ErAccessDenied {
			return Result{Refused: true, Message: me.Message}, nil
		}
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, deadline(ctx, err))
	}
	defer conn.Close()
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return Result{}, errors.New("the MySQL driver cannot query")
	}
	rows, err := q.QueryContext(ctx, "select 1", nil)
	if err != nil {
		return Result{}, fmt.Errorf("select 1 on %s: %w", addr, deadline(ctx, err))
	}
	defer rows.Close()
	row := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(row); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("no row")
		}
		return Result{}, fmt.Errorf("select 1 on %s: %w", addr, deadline(ctx, err))
	}
	if len(row) != 1 || fmt.Sprint(asString(row[0])) != "1" {
		return Result{}, fmt.Errorf("select 1 on %s answered %v", addr, row)
	}
	return Result{}, nil
}

// deadline says that the deadline passed when it did: the driver reports
// a cancelled handshake as a bad connection.
func deadline(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

func asString(v driver.Value) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

// quiet drops the driver's own log lines; the probe's error says it all.
type quiet struct{}

func (quiet) Print(...any) {}
