package obsim

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// createTenant makes tenant name on zones z1 and z2, its root without a
// password.
func createTenant(t *testing.T, op *sql.DB, name string) {
	t.Helper()
	mustExec(t, op, fmt.Sprintf("CREATE RESOURCE UNIT IF NOT EXISTS unit_%s MAX_CPU 1, MEMORY_SIZE '6G'", name))
	mustExec(t, op, fmt.Sprintf("CREATE RESOURCE POOL pool_%s UNIT = 'unit_%s', UNIT_NUM = 1, ZONE_LIST = ('z1', 'z2')", name, name))
	mustExec(t, op, fmt.Sprintf("CREATE TENANT %s PRIMARY_ZONE = 'z1', RESOURCE_POOL_LIST = ('pool_%s')", name, name))
}

// rowIDs returns the ids of app.t in order.
func rowIDs(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT id FROM app.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprint(id))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, ",")
}

// TestTenantData: a user tenant's tables and rows, written through any
// server, in transactions or not; a failed statement or a rolled back
// transaction leaves nothing; every commit survives the RootService's loss.
func TestTenantData(t *testing.T) {
	c := newTestCluster(t, 64)
	bootstrap(t, c)
	op := c.db(1, "operator", "s3cret", "oceanbase")
	createTenant(t, op, "t1")

	var app *sql.DB
	eventually(t, "root@t1 logs in on server 2", func() error {
		app = c.db(2, "root@t1", "", "")
		return app.Ping()
	})
	mustExec(t, app, "CREATE DATABASE app")
	mustExec(t, app, "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(32), at DATETIME(6))")
	res, err := app.Exec("INSERT INTO app.t VALUES (1, 'one', NOW(6)), (2, 'two', NOW(6))")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("rows affected: %d, want 2", n)
	}
	// A duplicate key fails and leaves its other row out too.
	if _, err := app.Exec("INSERT INTO app.t VALUES (3, 'three', NOW(6)), (1, 'again', NOW(6))"); err == nil ||
		!strings.Contains(err.Error(), "1062") {
		t.Fatalf("a duplicate key: got %v, want error 1062", err)
	}

	// A transaction on one connection: committed at COMMIT, as one.
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO app.t VALUES (4, 'four', NOW(6))", "UPDATE app.t SET v = 'ONE' WHERE id = 1"} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if got := rowIDs(t, app); got != "1,2" {
		t.Fatalf("before COMMIT another connection read %s, want 1,2", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, err = app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("DELETE FROM app.t"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := rowIDs(t, app); got != "1,2,4" {
		t.Fatalf("rows %s, want 1,2,4", got)
	}

	// A connection that names its database works in it.
	inApp := c.db(3, "root@t1", "", "app")
	var v string
	if err := inApp.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != "ONE" {
		t.Fatalf("row 1 through server 3: %q %v, want ONE", v, err)
	}
	// The tenant's data is its own: sys has no such database, another
	// tenant neither.
	if _, err := op.Exec("SELECT id FROM app.t"); err == nil {
		t.Fatal("sys read tenant t1's table")
	}
	createTenant(t, op, "t2")
	other := c.db(1, "root@t2", "", "")
	eventually(t, "root@t2 logs in", other.Ping)
	if _, err := other.Exec("SELECT id FROM app.t"); err == nil || !strings.Contains(err.Error(), "1049") {
		t.Fatalf("tenant t2 reading t1's table: got %v, want error 1049 (unknown database)", err)
	}

	// Four commits (CREATE DATABASE, CREATE TABLE, INSERT, the
	// transaction), in SCN order; the failed statement and the rolled back
	// transaction left none.
	s := c.nodes[c.ip(1)+":2882"].Snapshot()
	commits := s.tenantByName("t1").Commits
	if len(commits) != 4 || len(commits[3].Stmts) != 2 {
		t.Fatalf("commits: %+v, want 4, the last with 2 statements", commits)
	}
	for i := 1; i < len(commits); i++ {
		if commits[i].SCN <= commits[i-1].SCN {
			t.Fatalf("SCNs not increasing: %+v", commits)
		}
	}

	// The RootService's server dies: its successor rebuilds the data from
	// the commits the members have, NOW() values included.
	var before string
	if err := app.QueryRow("SELECT GROUP_CONCAT(CONCAT(id, v, at) ORDER BY id) FROM app.t").Scan(&before); err != nil {
		t.Fatal(err)
	}
	c.stop(1)
	eventually(t, "the rows through a new RootService", func() error {
		var after string
		if err := app.QueryRow("SELECT GROUP_CONCAT(CONCAT(id, v, at) ORDER BY id) FROM app.t").Scan(&after); err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("rows %q, want %q", after, before)
		}
		return nil
	})
	mustExec(t, app, "INSERT INTO app.t VALUES (5, 'five', NOW(6))")
	if got := rowIDs(t, app); got != "1,2,4,5" {
		t.Fatalf("rows %s, want 1,2,4,5", got)
	}
}
