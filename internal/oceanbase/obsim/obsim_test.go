package obsim

import (
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// fastKnobs make the simulated cluster quick enough for unit tests.
var fastKnobs = Knobs{
	BootstrapDelay: Duration{100 * time.Millisecond}, StartServiceDelay: Duration{200 * time.Millisecond},
	Lease: Duration{time.Second}, Heartbeat: Duration{100 * time.Millisecond},
	MigrateDelay: Duration{200 * time.Millisecond}, TenantDelay: Duration{200 * time.Millisecond},
	ArchiveDelay: Duration{200 * time.Millisecond}, BackupDelay: Duration{300 * time.Millisecond},
}

// testCluster runs simulated observers on 127.0.0.x with the real ports.
type testCluster struct {
	t     *testing.T
	base  int
	nodes map[string]*Node
	dirs  map[string]string
}

func newTestCluster(t *testing.T, base int) *testCluster {
	return &testCluster{t: t, base: base, nodes: map[string]*Node{}, dirs: map[string]string{}}
}

func (c *testCluster) ip(i int) string { return fmt.Sprintf("127.0.%d.%d", c.base, i) }

// start starts (or restarts, on its kept store) server i in zone.
func (c *testCluster) start(i int, zone string) *Node {
	c.t.Helper()
	ip := c.ip(i)
	if probe, err := net.Listen("tcp", ip+":0"); err != nil {
		c.t.Skipf("cannot listen on %s: %v", ip, err)
	} else {
		probe.Close()
	}
	addr := net.JoinHostPort(ip, "2882")
	if c.dirs[addr] == "" {
		c.dirs[addr] = c.t.TempDir()
	}
	n, err := New(Config{Addr: addr, SQLListen: ip + ":2881", RPCListen: addr, ClusterName: "obtest", ClusterID: 7,
		Zone: zone, DataDir: c.dirs[addr], Knobs: fastKnobs, Log: testLog(c.t), Options: map[string]string{"memory_limit": "8G"}})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[addr] = n
	c.t.Cleanup(func() {
		if c.nodes[addr] == n {
			n.Stop()
		}
	})
	return n
}

func (c *testCluster) stop(i int) {
	addr := net.JoinHostPort(c.ip(i), "2882")
	c.nodes[addr].Stop()
	delete(c.nodes, addr)
}

func (c *testCluster) db(i int, user, password, database string) *sql.DB {
	c.t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s:2881)/%s?interpolateParams=true&timeout=2s", user, password, c.ip(i), database)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	c.t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type serverRow struct {
	ip, zone, status, rs string
	started              bool
}

func servers(db *sql.DB) (map[string]serverRow, error) {
	rows, err := db.Query("SELECT SVR_IP, SVR_PORT, ZONE, STATUS, START_SERVICE_TIME, WITH_ROOTSERVER FROM oceanbase.DBA_OB_SERVERS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]serverRow{}
	for rows.Next() {
		var r serverRow
		var port int
		var start sql.NullString
		if err := rows.Scan(&r.ip, &port, &r.zone, &r.status, &start, &r.rs); err != nil {
			return nil, err
		}
		r.started = start.Valid
		out[r.ip] = r
	}
	return out, rows.Err()
}

func bootstrap(t *testing.T, c *testCluster) {
	t.Helper()
	for i, z := range []string{"z1", "z2", "z3"} {
		c.start(i+1, z)
	}
	root := c.db(1, "root", "", "")
	if _, err := root.Exec("SELECT * FROM oceanbase.DBA_OB_SERVERS"); err == nil || !strings.Contains(err.Error(), "4006") {
		t.Fatalf("a query before the bootstrap: got %v, want error 4006", err)
	}
	mustExec(t, root, "SET ob_query_timeout = ?", 1800000000)
	mustExec(t, root, fmt.Sprintf("ALTER SYSTEM BOOTSTRAP ZONE 'z1' SERVER '%s:2882', ZONE 'z2' SERVER '%s:2882', ZONE 'z3' SERVER '%s:2882'",
		c.ip(1), c.ip(2), c.ip(3)))
	if _, err := root.Exec(fmt.Sprintf("ALTER SYSTEM BOOTSTRAP ZONE 'z1' SERVER '%s:2882'", c.ip(1))); err == nil {
		t.Fatal("a second bootstrap succeeded")
	}
	mustExec(t, root, "CREATE USER IF NOT EXISTS 'operator' IDENTIFIED BY ?", "s3cret")
	mustExec(t, root, "GRANT ALL PRIVILEGES ON *.* TO 'operator'")
	mustExec(t, root, "ALTER USER 'root' IDENTIFIED BY ?", "rootpw")
}

func TestBootstrapServersAndFailover(t *testing.T) {
	c := newTestCluster(t, 61)
	bootstrap(t, c)
	// The operator logs in through another server, which forwards to the
	// RootService once the user reached it.
	var op *sql.DB
	eventually(t, "operator logs in on server 2", func() error {
		op = c.db(2, "operator", "s3cret", "oceanbase")
		return op.Ping()
	})
	if err := c.db(2, "operator", "wrong", "oceanbase").Ping(); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Fatalf("a wrong password: got %v, want error 1045", err)
	}
	eventually(t, "three servers serving", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		for ip, r := range rows {
			if r.status != ServerActive || !r.started {
				return fmt.Errorf("%s is %s, started %v", ip, r.status, r.started)
			}
		}
		if len(rows) != 3 || rows[c.ip(1)].rs != "YES" {
			return fmt.Errorf("servers %v", rows)
		}
		return nil
	})

	// Scale zone z1 out and in.
	c.start(4, "z1")
	mustExec(t, op, "ALTER SYSTEM ADD SERVER ? ZONE ?", c.ip(4)+":2882", "z1")
	if _, err := op.Exec("ALTER SYSTEM ADD SERVER ? ZONE ?", c.ip(4)+":2882", "z1"); err == nil {
		t.Fatal("adding a server twice succeeded")
	}
	eventually(t, "server 4 serving", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if r := rows[c.ip(4)]; r.status != ServerActive || !r.started || r.zone != "z1" {
			return fmt.Errorf("server 4: %+v", r)
		}
		return nil
	})
	mustExec(t, op, "ALTER SYSTEM DELETE SERVER ? ZONE ?", c.ip(4)+":2882", "z1")
	eventually(t, "server 4 gone", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if r, ok := rows[c.ip(4)]; ok {
			return fmt.Errorf("server 4 still %s", r.status)
		}
		return nil
	})
	// The RootService tells the deleted server after it drops its row.
	eventually(t, "the deleted server without the cluster's state", func() error {
		if c.nodes[c.ip(4)+":2882"].Snapshot() != nil {
			return fmt.Errorf("server 4 still holds the cluster's state")
		}
		return nil
	})

	// The only server of a zone cannot move its units: DELETE hangs.
	mustExec(t, op, "ALTER SYSTEM DELETE SERVER ?", c.ip(3)+":2882")
	time.Sleep(500 * time.Millisecond)
	rows, err := servers(op)
	if err != nil || rows[c.ip(3)].status != ServerDeleting {
		t.Fatalf("the only server of z3: %v %v, want DELETING", rows[c.ip(3)], err)
	}
	mustExec(t, op, "ALTER SYSTEM CANCEL DELETE SERVER ?", c.ip(3)+":2882")

	// Stopping two of three zones would lose the majority.
	mustExec(t, op, "ALTER SYSTEM STOP ZONE 'z3'")
	if _, err := op.Exec("ALTER SYSTEM STOP ZONE 'z2'"); err == nil || !strings.Contains(err.Error(), "majority") {
		t.Fatalf("stopping a second zone: %v", err)
	}
	mustExec(t, op, "ALTER SYSTEM START ZONE 'z3'")

	// The RootService's server dies: another takes over and the dead one
	// goes INACTIVE; it comes back ACTIVE with a new start time.
	c.stop(1)
	eventually(t, "a new RootService", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if rows[c.ip(1)].status != ServerInactive || rows[c.ip(2)].rs != "YES" {
			return fmt.Errorf("servers %v", rows)
		}
		return nil
	})
	c.start(1, "z1")
	eventually(t, "server 1 back", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if r := rows[c.ip(1)]; r.status != ServerActive || !r.started {
			return fmt.Errorf("server 1: %+v", r)
		}
		return nil
	})
}

func TestParametersAndTenants(t *testing.T) {
	c := newTestCluster(t, 62)
	bootstrap(t, c)
	op := c.db(1, "operator", "s3cret", "oceanbase")

	values := func(name string) map[string]string {
		t.Helper()
		rows, err := op.Query("SELECT SVR_IP, VALUE FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = ? AND TENANT_ID IS NULL", name)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var ip, v string
			if err := rows.Scan(&ip, &v); err != nil {
				t.Fatal(err)
			}
			out[ip] = v
		}
		return out
	}
	if v := values("memory_limit"); len(v) != 3 || v[c.ip(2)] != "8G" {
		t.Fatalf("memory_limit from the start options: %v", v)
	}
	mustExec(t, op, "ALTER SYSTEM SET syslog_level = 'INFO'")
	mustExec(t, op, "ALTER SYSTEM SET syslog_level = 'DEBUG' SERVER = ?", c.ip(3)+":2882")
	if v := values("syslog_level"); v[c.ip(1)] != "INFO" || v[c.ip(3)] != "DEBUG" {
		t.Fatalf("syslog_level: %v", v)
	}
	if _, err := op.Exec("ALTER SYSTEM SET no_such_parameter = 1"); err == nil {
		t.Fatal("an unknown parameter was accepted")
	}

	// A tenant below the minimum memory is refused; a fixed unit config
	// must be altered, not re-created (ob-operator #177).
	mustExec(t, op, "CREATE RESOURCE UNIT IF NOT EXISTS unit_t1 MAX_CPU 1, MEMORY_SIZE '1G'")
	mustExec(t, op, "CREATE RESOURCE POOL pool_t1 UNIT = 'unit_t1', UNIT_NUM = 1, ZONE_LIST = ('z1', 'z2')")
	if _, err := op.Exec("CREATE TENANT t1 RESOURCE_POOL_LIST = ('pool_t1')"); err == nil {
		t.Fatal("a tenant below __min_full_resource_pool_memory was created")
	}
	mustExec(t, op, "CREATE RESOURCE UNIT IF NOT EXISTS unit_t1 MAX_CPU 1, MEMORY_SIZE '6G'")
	mustExec(t, op, "ALTER RESOURCE UNIT unit_t1 MAX_CPU 2, MEMORY_SIZE '6G'")
	mustExec(t, op, "CREATE TENANT IF NOT EXISTS t1 CHARSET = 'utf8mb4', PRIMARY_ZONE = 'z1', RESOURCE_POOL_LIST = ('pool_t1'), LOCALITY = 'FULL{1}@z2,FULL{1}@z1' SET VARIABLES ob_tcp_invited_nodes = '%'")
	var status, locality string
	if err := op.QueryRow("SELECT STATUS, LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 't1'").Scan(&status, &locality); err != nil {
		t.Fatal(err)
	}
	if status != TenantNormal || locality != "FULL{1}@z2, FULL{1}@z1" {
		t.Fatalf("tenant t1: %s %q", status, locality)
	}
	// The tenant's root logs in as root@t1 with an empty password.
	if err := c.db(2, "root@t1", "", "oceanbase").Ping(); err != nil {
		t.Fatalf("root@t1: %v", err)
	}

	// Locality: one zone at a time, as a job.
	mustExec(t, op, "ALTER RESOURCE POOL pool_t1 ZONE_LIST = ('z1', 'z2', 'z3')")
	if _, err := op.Exec("ALTER TENANT t1 LOCALITY = 'FULL{1}@z1'"); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Exec("ALTER TENANT t1 LOCALITY = 'FULL{1}@z1,FULL{1}@z2,FULL{1}@z3'"); err == nil {
		t.Fatal("a second locality change while one runs was accepted")
	}
	eventually(t, "the locality job finishes", func() error {
		var n int
		if err := op.QueryRow("SELECT count(*) FROM oceanbase.DBA_OB_TENANT_JOBS WHERE JOB_STATUS = 'INPROGRESS' AND JOB_TYPE = 'ALTER_TENANT_LOCALITY'").Scan(&n); err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("%d jobs in progress", n)
		}
		return nil
	})
	if _, err := op.Exec("ALTER TENANT t1 LOCALITY = 'FULL{1}@z1,FULL{1}@z2,FULL{1}@z3'"); err == nil {
		t.Fatal("a locality change of two zones at once was accepted")
	}

	if _, err := op.Exec("ALTER RESOURCE TENANT t1 UNIT_NUM = 2"); err == nil {
		t.Fatal("two units per zone were placed on one server per zone")
	}
	mustExec(t, op, "DROP TENANT t1 FORCE")
	if _, err := op.Exec("DROP RESOURCE POOL pool_t1"); err == nil {
		t.Fatal("the pool of a dropping tenant was dropped")
	}
	eventually(t, "the tenant is gone and its pool dropped", func() error {
		_, err := op.Exec("DROP RESOURCE POOL pool_t1")
		return err
	})
	mustExec(t, op, "DROP RESOURCE UNIT unit_t1")
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestRemoveTheRootServiceZone takes zone z1, where the RootService runs,
// out of the cluster as OceanBase allows: the sys tenant's locality drops
// the zone (the RootService moves with the sys tenant's leader to another
// zone), then its pool, the zone is stopped, its server deleted, and the
// zone deleted. Before the locality change, the server cannot be deleted.
func TestRemoveTheRootServiceZone(t *testing.T) {
	c := newTestCluster(t, 67)
	bootstrap(t, c)
	op := c.db(2, "operator", "s3cret", "oceanbase")
	eventually(t, "server 1 runs the RootService", func() error {
		rows, err := servers(op)
		if err == nil && (rows[c.ip(1)].rs != "YES" || !rows[c.ip(2)].started) {
			err = fmt.Errorf("servers %v", rows)
		}
		return err
	})
	if _, err := op.Exec("ALTER SYSTEM DELETE SERVER ?", c.ip(1)+":2882"); err == nil {
		t.Fatal("deleting the RootService's server succeeded")
	}
	mustExec(t, op, "ALTER TENANT sys SET LOCALITY = 'FULL{1}@z2, FULL{1}@z3'")
	eventually(t, "the RootService moves to zone z2", func() error {
		var prev sql.NullString
		if err := op.QueryRow("SELECT PREVIOUS_LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'sys'").Scan(&prev); err != nil {
			return err
		}
		if prev.Valid {
			return fmt.Errorf("previous locality %q", prev.String)
		}
		rows, err := servers(op)
		if err == nil && (rows[c.ip(2)].rs != "YES" || rows[c.ip(1)].rs != "NO") {
			err = fmt.Errorf("servers %v", rows)
		}
		return err
	})
	if !c.nodes[c.ip(2)+":2882"].IsRootService() || c.nodes[c.ip(1)+":2882"].IsRootService() {
		t.Fatal("the nodes disagree with DBA_OB_SERVERS on the RootService")
	}
	mustExec(t, op, "ALTER RESOURCE POOL sys_pool ZONE_LIST = ('z2', 'z3')")
	mustExec(t, op, "ALTER SYSTEM STOP ZONE 'z1'")
	mustExec(t, op, "ALTER SYSTEM DELETE SERVER ? ZONE 'z1'", c.ip(1)+":2882")
	eventually(t, "server 1 gone", func() error {
		rows, err := servers(op)
		if _, ok := rows[c.ip(1)]; ok && err == nil {
			err = fmt.Errorf("servers %v", rows)
		}
		return err
	})
	mustExec(t, op, "ALTER SYSTEM DELETE ZONE 'z1'")
	var zones int
	if err := op.QueryRow("SELECT count(*) FROM oceanbase.DBA_OB_ZONES").Scan(&zones); err != nil || zones != 2 {
		t.Fatalf("zones after the removal: %d (%v)", zones, err)
	}
}

// TestLostStoreReplaced is an observer that lost its store: restarted
// empty at its address, it does not rejoin (its server stays INACTIVE),
// the address cannot be added again, and deleting the only server of its
// zone cannot finish; a new observer at a new address joins by ADD SERVER,
// and then the deletion finishes, the zone's unit moved to the new server.
func TestLostStoreReplaced(t *testing.T) {
	c := newTestCluster(t, 163)
	bootstrap(t, c)
	op := c.db(1, "operator", "s3cret", "oceanbase")
	lost := c.ip(3) + ":2882"
	eventually(t, "three servers serving", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if len(rows) != 3 || !rows[c.ip(3)].started {
			return fmt.Errorf("servers %v", rows)
		}
		return nil
	})

	c.stop(3)
	c.dirs[lost] = c.t.TempDir() // its volume is gone
	c.start(3, "z3")
	eventually(t, "the emptied server inactive", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if rows[c.ip(3)].status != ServerInactive {
			return fmt.Errorf("servers %v", rows)
		}
		return nil
	})
	time.Sleep(time.Second) // heartbeats reach it and are refused
	if rows, err := servers(op); err != nil || rows[c.ip(3)].status != ServerInactive {
		t.Fatalf("an empty observer rejoined as its old server: %v %v", rows, err)
	}
	if c.nodes[lost].Snapshot() != nil {
		t.Fatal("an empty observer adopted the cluster's state")
	}
	if _, err := op.Exec("ALTER SYSTEM ADD SERVER ? ZONE ?", lost, "z3"); err == nil {
		t.Fatal("adding the address of a listed server succeeded")
	}
	// An observer started as another address (its entrypoint resolved a
	// stale one) is not the server of the address that routes to it.
	stale, err := New(Config{Addr: c.ip(5) + ":2882", SQLListen: c.ip(6) + ":2881", RPCListen: c.ip(6) + ":2882",
		ClusterName: "obtest", ClusterID: 7, Zone: "z3", Knobs: fastKnobs, Log: testLog(t)})
	if err == nil {
		err = stale.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Exec("ALTER SYSTEM ADD SERVER ? ZONE ?", c.ip(6)+":2882", "z3"); err == nil || !strings.Contains(err.Error(), "answers as") {
		t.Fatalf("adding an address whose observer answers as another: %v", err)
	}
	stale.Stop()

	mustExec(t, op, "ALTER SYSTEM DELETE SERVER ? ZONE ?", lost, "z3")
	time.Sleep(500 * time.Millisecond)
	if rows, err := servers(op); err != nil || rows[c.ip(3)].status != ServerDeleting {
		t.Fatalf("the only server of z3: %v %v, want DELETING", rows[c.ip(3)], err)
	}

	c.start(4, "z3")
	mustExec(t, op, "ALTER SYSTEM ADD SERVER ? ZONE ?", c.ip(4)+":2882", "z3")
	eventually(t, "the lost server deleted, its unit on the new one", func() error {
		rows, err := servers(op)
		if err != nil {
			return err
		}
		if r, ok := rows[c.ip(3)]; ok {
			return fmt.Errorf("the lost server is still %s", r.status)
		}
		if r := rows[c.ip(4)]; r.status != ServerActive || !r.started {
			return fmt.Errorf("the new server: %+v", r)
		}
		var units int
		if err := op.QueryRow("SELECT COUNT(*) FROM oceanbase.DBA_OB_UNITS WHERE SVR_IP = ? AND ZONE = 'z3'", c.ip(4)).Scan(&units); err != nil {
			return err
		}
		if units != 1 {
			return fmt.Errorf("%d units on the new server", units)
		}
		return nil
	})
}

// TestServerVersion checks that the MySQL handshake announces the release
// of the build_version, so that two images with different versions tell
// themselves apart to a client.
func TestServerVersion(t *testing.T) {
	for build, want := range map[string]string{
		DefaultBuildVersion: "5.7.25-OceanBase_CE-v4.3.5.1",
		"4.3.5.2_101000012025012817-obsim(Jan 28 2025 17:00:00)": "5.7.25-OceanBase_CE-v4.3.5.2",
		"4.2.1.8": "5.7.25-OceanBase_CE-v4.2.1.8",
	} {
		if got := serverVersion(build); got != want {
			t.Errorf("serverVersion(%q) = %q, want %q", build, got, want)
		}
	}
}
