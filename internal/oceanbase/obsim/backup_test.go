package obsim

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// queryString reads one string.
func queryString(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.String
}

// TestTenantArchiveAndBackup: a tenant's archive round and its full and
// incremental backup sets, on a file destination, through the statements
// and views ob-operator uses; the files hold exactly the commits.
func TestTenantArchiveAndBackup(t *testing.T) {
	c := newTestCluster(t, 65)
	bootstrap(t, c)
	op := c.db(1, "operator", "s3cret", "oceanbase")
	createTenant(t, op, "t1")
	var app *sql.DB
	eventually(t, "root@t1 logs in", func() error {
		app = c.db(2, "root@t1", "", "oceanbase")
		return app.Ping()
	})
	dir := t.TempDir()
	archive, data := "file://"+dir+"/archive", "file://"+dir+"/data"

	if _, err := app.Exec("ALTER SYSTEM ARCHIVELOG"); err == nil || !strings.Contains(err.Error(), "LOG_ARCHIVE_DEST") {
		t.Fatalf("ARCHIVELOG without a destination: %v", err)
	}
	if _, err := app.Exec("ALTER SYSTEM SET LOG_ARCHIVE_DEST = 'LOCATION=ftp://x/y'"); err == nil {
		t.Fatal("an ftp destination was accepted")
	}
	mustExec(t, app, fmt.Sprintf("ALTER SYSTEM SET LOG_ARCHIVE_DEST = 'LOCATION=%s PIECE_SWITCH_INTERVAL=1d BINDING=Optional'", archive))
	mustExec(t, app, fmt.Sprintf("ALTER SYSTEM SET DATA_BACKUP_DEST = '%s'", data))
	if got := queryString(t, app, "SELECT value FROM DBA_OB_ARCHIVE_DEST WHERE name = 'path'"); got != archive {
		t.Fatalf("archive path %q, want %q", got, archive)
	}
	if got := queryString(t, app, "SELECT value FROM DBA_OB_BACKUP_PARAMETER WHERE name = 'data_backup_dest'"); got != data {
		t.Fatalf("data_backup_dest %q, want %q", got, data)
	}
	if _, err := app.Exec("ALTER SYSTEM BACKUP DATABASE"); err == nil {
		t.Fatal("a backup without the archive was accepted")
	}
	mustExec(t, app, "ALTER SYSTEM ARCHIVELOG")
	if got := queryString(t, app, "SELECT log_mode FROM DBA_OB_TENANTS"); got != "ARCHIVELOG" {
		t.Fatalf("log_mode %q", got)
	}
	if _, err := app.Exec(fmt.Sprintf("ALTER SYSTEM SET LOG_ARCHIVE_DEST = 'LOCATION=%s/other'", archive)); err == nil {
		t.Fatal("the archive destination changed while archiving")
	}
	archiveStatus := func() string {
		return queryString(t, app, "SELECT status FROM DBA_OB_ARCHIVELOG_SUMMARY ORDER BY round_id DESC LIMIT 1")
	}
	eventually(t, "the archive DOING", func() error {
		if s := archiveStatus(); s != ArchiveDoing {
			return fmt.Errorf("archive %s", s)
		}
		return nil
	})

	mustExec(t, app, "CREATE DATABASE app")
	mustExec(t, app, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	mustExec(t, app, "INSERT INTO app.t VALUES (1), (2)")
	mustExec(t, app, "ALTER SYSTEM BACKUP DATABASE")
	if _, err := app.Exec("ALTER SYSTEM BACKUP DATABASE"); err == nil {
		t.Fatal("a second backup job while one runs was accepted")
	}
	if got := queryString(t, app, "SELECT status FROM DBA_OB_BACKUP_JOBS ORDER BY job_id DESC LIMIT 1"); got != BackupDoing {
		t.Fatalf("the job %q, want DOING", got)
	}
	waitJob := func(typ string) {
		t.Helper()
		eventually(t, typ+" backup completed", func() error {
			var status string
			err := app.QueryRow("SELECT status FROM DBA_OB_BACKUP_JOB_HISTORY WHERE backup_type = ? ORDER BY job_id DESC LIMIT 1", typ).Scan(&status)
			if err != nil {
				return err
			}
			if status != BackupCompleted {
				return fmt.Errorf("job %s", status)
			}
			return nil
		})
	}
	waitJob("FULL")
	mustExec(t, app, "INSERT INTO app.t VALUES (3)")
	mustExec(t, app, "ALTER SYSTEM BACKUP INCREMENTAL DATABASE")
	waitJob("INC")
	mustExec(t, app, "INSERT INTO app.t VALUES (4)")

	// Two sets: the full one with the first three commits, the incremental
	// one with the fourth, each at an SCN past its last commit.
	s := c.nodes[c.ip(1)+":2882"].Snapshot().tenantByName("t1")
	sets := s.Backup.Sets
	if len(sets) != 2 || sets[1].PrevFull != sets[0].SetID || sets[1].StartSCN != sets[0].SCN {
		t.Fatalf("sets %+v", sets)
	}
	d, err := parseDest(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]Commit{s.Commits[:3], s.Commits[3:4]} {
		var f backupFile
		b, err := d.get(context.Background(), fmt.Sprintf("backup_set_%d_%s/logstream_1001/major_data/commits.obbak",
			sets[i].SetID, strings.ToLower(sets[i].Type)))
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil || len(f.Commits) != len(want) || f.Commits[len(want)-1].SCN != want[len(want)-1].SCN {
			t.Fatalf("set %d holds %+v (%v), want %+v", sets[i].SetID, f.Commits, err, want)
		}
	}
	if got := queryString(t, op, "SELECT count(*) FROM CDB_OB_BACKUP_SET_FILES WHERE tenant_id = 1002 AND status = 'SUCCESS'"); got != "2" {
		t.Fatalf("sys sees %s sets of t1, want 2", got)
	}

	// The archive catches up with every commit; its checkpoint passes the
	// last one.
	last := c.nodes[c.ip(1)+":2882"].Snapshot().tenantByName("t1").Commits
	eventually(t, "every commit archived", func() error {
		var checkpoint int64
		if err := app.QueryRow("SELECT checkpoint_scn FROM DBA_OB_ARCHIVELOG ORDER BY round_id DESC LIMIT 1").Scan(&checkpoint); err != nil {
			return err
		}
		if checkpoint < last[len(last)-1].SCN {
			return fmt.Errorf("checkpoint %d before the last commit %d", checkpoint, last[len(last)-1].SCN)
		}
		return nil
	})
	archived, err := parseDest(archive)
	if err != nil {
		t.Fatal(err)
	}
	names, err := archived.list(context.Background(), "piece_d1001r1p1/logstream_1001/log")
	if err != nil {
		t.Fatal(err)
	}
	var scns []int64
	for _, name := range names {
		var f backupFile
		b, err := archived.get(context.Background(), name)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range f.Commits {
			scns = append(scns, c.SCN)
		}
	}
	if len(scns) != len(last) {
		t.Fatalf("archived %d commits, want %d", len(scns), len(last))
	}

	// Restore into a new tenant: until the fourth commit, row 3, (the full
	// set, then the archive) only the rows committed by then; to the last
	// commit (both sets, then the archive) every row.
	restore(t, c, op, "t2", archive, data, last, 4, "1,2,3")
	restore(t, c, op, "t3", archive, data, last, len(last), "1,2,3,4")
	if _, err := op.Exec(fmt.Sprintf("ALTER SYSTEM RESTORE t2 FROM '%s,%s' WITH 'pool_list=pool_t1'", data, archive)); err == nil ||
		!strings.Contains(err.Error(), "5157") {
		t.Fatalf("a restore into an existing tenant: got %v, want error 5157", err)
	}
	// A point before the first full set cannot be restored.
	createPool(t, op, "t4")
	mustExec(t, op, fmt.Sprintf("ALTER SYSTEM RESTORE t4 FROM '%s,%s' UNTIL SCN = %d WITH 'pool_list=pool_t4'", data, archive, last[0].SCN))
	eventually(t, "the restore of t4 failed", func() error {
		var status, comment string
		if err := op.QueryRow("SELECT status, description FROM CDB_OB_RESTORE_HISTORY WHERE restore_tenant_name = 't4'").Scan(&status, &comment); err != nil {
			return err
		}
		if status != RestoreFail || !strings.Contains(comment, "no full backup set") {
			return fmt.Errorf("restore %s: %s", status, comment)
		}
		return nil
	})
	if got := queryString(t, op, "SELECT status FROM DBA_OB_TENANTS WHERE tenant_name = 't4'"); got != TenantRestoreFailed {
		t.Fatalf("tenant t4 %s, want RESTORE_FAIL", got)
	}

	// Pause, resume, stop; a delete policy.
	mustExec(t, app, "ALTER SYSTEM SET LOG_ARCHIVE_DEST_STATE = 'DEFER'")
	if s := archiveStatus(); s != ArchiveSuspend {
		t.Fatalf("archive %s after DEFER, want SUSPEND", s)
	}
	mustExec(t, app, "ALTER SYSTEM SET LOG_ARCHIVE_DEST_STATE = 'ENABLE'")
	if s := archiveStatus(); s != ArchiveDoing {
		t.Fatalf("archive %s after ENABLE, want DOING", s)
	}
	mustExec(t, app, "ALTER SYSTEM NOARCHIVELOG")
	if s := archiveStatus(); s != ArchiveStop {
		t.Fatalf("archive %s after NOARCHIVELOG, want STOP", s)
	}
	mustExec(t, app, "ALTER SYSTEM ADD DELETE BACKUP POLICY 'default' RECOVERY_WINDOW '7d'")
	if got := queryString(t, app, "SELECT recovery_window FROM DBA_OB_BACKUP_DELETE_POLICY WHERE policy_name = 'default'"); got != "7d" {
		t.Fatalf("recovery window %q", got)
	}
	// sys runs them for a tenant with TENANT =.
	mustExec(t, op, "ALTER SYSTEM DROP DELETE BACKUP POLICY 'default' TENANT = t1")
	if _, err := app.Exec("ALTER SYSTEM DROP DELETE BACKUP POLICY 'default'"); err == nil {
		t.Fatal("dropping a dropped policy succeeded")
	}
}

// createPool makes unit_<name> and pool_<name> on z1 and z2.
func createPool(t *testing.T, op *sql.DB, name string) {
	t.Helper()
	mustExec(t, op, fmt.Sprintf("CREATE RESOURCE UNIT IF NOT EXISTS unit_%s MAX_CPU 1, MEMORY_SIZE '6G'", name))
	mustExec(t, op, fmt.Sprintf("CREATE RESOURCE POOL pool_%s UNIT = 'unit_%s', UNIT_NUM = 1, ZONE_LIST = ('z1', 'z2')", name, name))
}

// restore restores the backup into tenant name until the SCN of the
// upTo-th commit, checks the restore's record and the rows, and that the
// tenant is a read-only standby until activated.
func restore(t *testing.T, c *testCluster, op *sql.DB, name, archive, data string, commits []Commit, upTo int, rows string) {
	t.Helper()
	createPool(t, op, name)
	// The next microsecond: a time has no finer grain.
	until := time.Unix(0, (commits[upTo-1].SCN/1000+1)*1000).UTC().Format("2006-01-02 15:04:05.000000")
	mustExec(t, op, fmt.Sprintf("ALTER SYSTEM RESTORE %s FROM '%s,%s' UNTIL TIME = '%s' WITH 'pool_list=pool_%s&primary_zone=z1'",
		name, data, archive, until, name))
	if got := queryString(t, op, "SELECT status FROM CDB_OB_RESTORE_PROGRESS WHERE restore_tenant_name = ?", name); got != RestoreDoing {
		t.Fatalf("restore of %s: %q in progress", name, got)
	}
	eventually(t, "the restore of "+name, func() error {
		var status string
		var comment sql.NullString
		if err := op.QueryRow("SELECT status, description FROM CDB_OB_RESTORE_HISTORY WHERE restore_tenant_name = ?", name).Scan(&status, &comment); err != nil {
			return err
		}
		if status != RestoreSuccess {
			return fmt.Errorf("restore %s: %s", status, comment.String)
		}
		return nil
	})
	if got := queryString(t, op, "SELECT tenant_role FROM DBA_OB_TENANTS WHERE tenant_name = ?", name); got != RoleStandby {
		t.Fatalf("restored tenant %s is %s, want STANDBY", name, got)
	}
	db := c.db(3, "root@"+name, "", "")
	eventually(t, "root@"+name+" logs in on server 3", db.Ping)
	if got := rowIDs(t, db); got != rows {
		t.Fatalf("tenant %s restored until %s has rows %s, want %s", name, until, got, rows)
	}
	if _, err := db.Exec("INSERT INTO app.t VALUES (100)"); err == nil {
		t.Fatalf("standby %s took a write", name)
	}
	mustExec(t, op, "ALTER SYSTEM ACTIVATE STANDBY TENANT "+name)
	mustExec(t, db, "INSERT INTO app.t VALUES (100)")
}
