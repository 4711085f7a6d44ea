package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// obSQL runs query on the OceanBase observer at server (host:2881) as user
// (user@tenant), as a MySQL client would, and prints each row of its
// answer on a line, the columns separated by tabs and NULL as NULL.
func obSQL(ctx context.Context, server, user, password, query string) {
	db := openSQL(server, user, password)
	defer db.Close()
	printRows(ctx, db, query)
}

// sqlSession runs statements one after another on one connection to the
// MySQL server at server, printing each one's rows; a statement "pause D"
// waits for the duration D instead. A MatrixOne proxy may move the
// session to another CN between two statements: its variables must
// follow it.
func sqlSession(ctx context.Context, server, user, password string, statements []string) {
	db := openSQL(server, user, password)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		fail("sql %s as %s: %v", server, user, err)
	}
	defer conn.Close()
	for _, st := range statements {
		if d, ok := strings.CutPrefix(st, "pause "); ok {
			pause, err := time.ParseDuration(d)
			if err != nil {
				fail("%s: %v", st, err)
			}
			time.Sleep(pause)
			continue
		}
		printRows(ctx, conn, st)
	}
}

// sqlWait asks the MySQL server at server "select 1" every 100 ms until it
// answers, then prints "served" and the time it did (RFC 3339, in
// nanoseconds): the benchmarks' probe of when SQL is served.
func sqlWait(ctx context.Context, server, user, password string) {
	db := openSQL(server, user, password)
	defer db.Close()
	db.SetMaxIdleConns(0) // a new connection, through the proxy, each time
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		var one int
		err := db.QueryRowContext(attempt, "select 1").Scan(&one)
		cancel()
		if err == nil {
			fmt.Println("served", time.Now().UTC().Format(time.RFC3339Nano))
			return
		}
		select {
		case <-ctx.Done():
			fail("sql-wait %s: %v", server, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func openSQL(server, user, password string) *sql.DB {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, password, "tcp", server
	cfg.AllowNativePasswords = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		fail("sql: %v", err)
	}
	return sql.OpenDB(conn)
}

// printRows prints each row of query's answer on a line, the columns
// separated by tabs and NULL as NULL.
func printRows(ctx context.Context, db interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, query string) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		fail("sql %q: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		fail("sql: %v", err)
	}
	for rows.Next() {
		values := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			fail("sql: %v", err)
		}
		fields := make([]string, len(values))
		for i, v := range values {
			fields[i] = "NULL"
			if v.Valid {
				fields[i] = v.String
			}
		}
		fmt.Println(strings.Join(fields, "\t"))
	}
	if err := rows.Err(); err != nil {
		fail("sql: %v", err)
	}
}

// obsimKnobs changes the knobs of the observer simulator at server
// (host:2882, its control endpoint): it reads them, sets the fields of
// patch (a JSON object) and writes them back, so the others keep their
// values.
func obsimKnobs(ctx context.Context, server, patch string) {
	url := "http://" + server + "/obsim/v1/knobs"
	knobs := map[string]any{}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		fail("%v", err)
	}
	if err := do(req, &knobs); err != nil {
		fail("get %s: %v", url, err)
	}
	if err := json.Unmarshal([]byte(patch), &knobs); err != nil {
		fail("knobs %q: %v", patch, err)
	}
	body, err := json.Marshal(knobs)
	if err != nil {
		fail("%v", err)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := do(req, nil); err != nil {
		fail("post %s: %v", url, err)
	}
	os.Stdout.Write(append(body, '\n'))
}

// do sends req and decodes the answer into out, when not nil.
func do(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}
