package obsim

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestStandbyTenant: a standby tenant in another cluster replays its
// primary's commits and users, refuses writes, switches over (refused while the
// primary is still primary) and the old primary then follows the new one;
// a failover activates a standby at once.
func TestStandbyTenant(t *testing.T) {
	a, b := newTestCluster(t, 68), newTestCluster(t, 69)
	bootstrap(t, a)
	bootstrap(t, b)
	opA, opB := a.db(1, "operator", "s3cret", "oceanbase"), b.db(1, "operator", "s3cret", "oceanbase")
	createTenant(t, opA, "p1")
	var primary *sql.DB
	eventually(t, "root@p1 logs in", func() error {
		primary = a.db(1, "root@p1", "", "")
		return primary.Ping()
	})
	mustExec(t, primary, "CREATE USER IF NOT EXISTS standbyro IDENTIFIED BY ?", "ro")
	mustExec(t, primary, "GRANT SELECT ON oceanbase.* TO 'standbyro'")
	mustExec(t, primary, "CREATE DATABASE app")
	mustExec(t, primary, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	mustExec(t, primary, "INSERT INTO app.t VALUES (1), (2)")

	createPool(t, opB, "s1")
	source := fmt.Sprintf("SERVICE=%s:2881 USER=standbyro@p1 PASSWORD=ro", a.ip(2))
	if _, err := opB.Exec("CREATE STANDBY TENANT s1 LOG_RESTORE_SOURCE = ?, RESOURCE_POOL_LIST = ('pool_s1')", "SERVICE=x"); err == nil {
		t.Fatal("a standby with a malformed source was created")
	}
	if got := queryString(t, opB, "SELECT COUNT(*) FROM DBA_OB_TENANTS WHERE tenant_name = 's1'"); got != "0" {
		t.Fatalf("the refused CREATE STANDBY TENANT left %s tenants s1", got)
	}
	mustExec(t, opB, "CREATE STANDBY TENANT IF NOT EXISTS s1 LOG_RESTORE_SOURCE = ?, PRIMARY_ZONE = 'z1', RESOURCE_POOL_LIST = ('pool_s1')", source)
	standby := b.db(2, "root@s1", "", "")
	waitRows := func(db *sql.DB, want string) {
		t.Helper()
		eventually(t, "rows "+want, func() error {
			if err := db.Ping(); err != nil {
				return err
			}
			var got sql.NullString
			if err := db.QueryRow("SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t").Scan(&got); err != nil {
				return err
			}
			if got.String != want {
				return fmt.Errorf("rows %q", got.String)
			}
			return nil
		})
	}
	waitRows(standby, "1,2")
	// The primary's users are the standby's (OceanBase replays them; the
	// second server's copy of the state follows the RootService's).
	eventually(t, "the primary's user standbyro logs in to the standby", func() error { return b.db(2, "standbyro@s1", "ro", "").Ping() })
	mustExec(t, primary, "INSERT INTO app.t VALUES (3)")
	waitRows(standby, "1,2,3")
	if _, err := standby.Exec("INSERT INTO app.t VALUES (9)"); err == nil {
		t.Fatal("the standby took a write")
	}
	if got := queryString(t, opB, "SELECT tenant_role FROM DBA_OB_TENANTS WHERE tenant_name = 's1'"); got != RoleStandby {
		t.Fatalf("s1 is %s", got)
	}
	if got := queryString(t, opB, "SELECT value FROM CDB_OB_LOG_RESTORE_SOURCE"); got != source {
		t.Fatalf("log restore source %q", got)
	}

	// Switchover: refused while p1 is still primary; then p1 becomes a
	// standby, s1 the primary, and p1 follows s1.
	if _, err := opB.Exec("ALTER SYSTEM SWITCHOVER TO PRIMARY TENANT = s1"); err == nil || !strings.Contains(err.Error(), "not in sync") {
		t.Fatalf("a switchover while the primary serves: %v", err)
	}
	mustExec(t, opA, "ALTER SYSTEM SWITCHOVER TO STANDBY TENANT = p1")
	if _, err := primary.Exec("INSERT INTO app.t VALUES (9)"); err == nil {
		t.Fatal("the old primary took a write after switching to standby")
	}
	mustExec(t, opB, "ALTER SYSTEM SWITCHOVER TO PRIMARY TENANT = s1")
	mustExec(t, standby, "INSERT INTO app.t VALUES (4)")
	mustExec(t, standby, "CREATE USER IF NOT EXISTS standbyro IDENTIFIED BY ?", "ro")
	mustExec(t, opA, "ALTER SYSTEM SET LOG_RESTORE_SOURCE = ? TENANT = 'p1'",
		fmt.Sprintf("SERVICE=%s:2881 USER=standbyro@s1 PASSWORD=ro", b.ip(1)))
	waitRows(primary, "1,2,3,4")

	// Failover: p1 is activated at once.
	mustExec(t, opA, "ALTER SYSTEM ACTIVATE STANDBY TENANT p1")
	mustExec(t, primary, "INSERT INTO app.t VALUES (5)")
	if got := queryString(t, opA, "SELECT tenant_role FROM DBA_OB_TENANTS WHERE tenant_name = 'p1'"); got != RolePrimary {
		t.Fatalf("p1 is %s after the failover", got)
	}
}
