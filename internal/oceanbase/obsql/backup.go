package obsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A tenant's log archive and data backups, run from the sys tenant with
// TENANT = name and read from the CDB_OB_ views (OceanBase 4.x).

// ArchiveDest is a tenant's first log archive destination
// (CDB_OB_ARCHIVE_DEST, dest_no 1); Path is "" when none is set.
type ArchiveDest struct {
	Path, PieceSwitchInterval, Binding, State string
}

// TenantArchiveDest reads the tenant's archive destination.
func TenantArchiveDest(ctx context.Context, db *sql.DB, tenantID int64) (ArchiveDest, error) {
	var d ArchiveDest
	rows, err := db.QueryContext(ctx, "SELECT NAME, VALUE FROM oceanbase.CDB_OB_ARCHIVE_DEST WHERE TENANT_ID = ? AND DEST_NO = 1", tenantID)
	if err != nil {
		return d, fmt.Errorf("read the archive destination: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return d, fmt.Errorf("read the archive destination: %w", err)
		}
		switch strings.ToLower(name) {
		case "path":
			d.Path = value.String
		case "piece_switch_interval":
			d.PieceSwitchInterval = value.String
		case "binding":
			d.Binding = value.String
		case "state":
			d.State = value.String
		}
	}
	return d, rows.Err()
}

// TenantDataBackupDest reads the tenant's DATA_BACKUP_DEST, "" when none.
func TenantDataBackupDest(ctx context.Context, db *sql.DB, tenantID int64) (string, error) {
	var v sql.NullString
	err := db.QueryRowContext(ctx, "SELECT VALUE FROM oceanbase.CDB_OB_BACKUP_PARAMETER WHERE TENANT_ID = ? AND NAME = 'data_backup_dest'", tenantID).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the data backup destination: %w", err)
	}
	return v.String, nil
}

// TenantDeletePolicy reads the recovery window of the tenant's delete
// policy 'default', "" when it has none.
func TenantDeletePolicy(ctx context.Context, db *sql.DB, tenantID int64) (string, error) {
	var v string
	err := db.QueryRowContext(ctx, "SELECT RECOVERY_WINDOW FROM oceanbase.CDB_OB_BACKUP_DELETE_POLICY WHERE TENANT_ID = ? AND POLICY_NAME = 'default'", tenantID).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the delete policy: %w", err)
	}
	return v, nil
}

// TenantLogMode reads DBA_OB_TENANTS.LOG_MODE: ARCHIVELOG or NOARCHIVELOG.
func TenantLogMode(ctx context.Context, db *sql.DB, tenantID int64) (string, error) {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT LOG_MODE FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_ID = ?", tenantID).Scan(&v); err != nil {
		return "", fmt.Errorf("read the log mode: %w", err)
	}
	return v, nil
}

// ArchiveRound is a row of CDB_OB_ARCHIVELOG_SUMMARY.
type ArchiveRound struct {
	RoundID                 int64
	Status, Path            string
	StartSCN, CheckpointSCN int64
}

// LatestArchiveRound reads the tenant's newest archive round, nil before
// the first.
func LatestArchiveRound(ctx context.Context, db *sql.DB, tenantID int64) (*ArchiveRound, error) {
	var r ArchiveRound
	var path sql.NullString
	err := db.QueryRowContext(ctx, "SELECT ROUND_ID, STATUS, START_SCN, CHECKPOINT_SCN, PATH FROM oceanbase.CDB_OB_ARCHIVELOG_SUMMARY WHERE TENANT_ID = ? ORDER BY ROUND_ID DESC LIMIT 1", tenantID).
		Scan(&r.RoundID, &r.Status, &r.StartSCN, &r.CheckpointSCN, &path)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the archive round: %w", err)
	}
	r.Path = path.String
	return &r, nil
}

// BackupJob is a row of CDB_OB_BACKUP_JOBS or CDB_OB_BACKUP_JOB_HISTORY.
type BackupJob struct {
	JobID, BackupSetID int64
	// Type is FULL or INC.
	Type, Status, Comment, Path string
	Result                      int64
	Start                       time.Time
	End                         *time.Time
}

// Finished reports whether the job has ended, whichever way.
func (j BackupJob) Finished() bool {
	return j.Status == "COMPLETED" || j.Status == "FAILED" || j.Status == "CANCELED"
}

const backupJobColumns = "JOB_ID, BACKUP_SET_ID, BACKUP_TYPE, STATUS, RESULT, COMMENT, PATH, START_TIMESTAMP, END_TIMESTAMP"

// BackupJobs lists the tenant's backup jobs, running then ended, each
// oldest first.
func BackupJobs(ctx context.Context, db *sql.DB, tenantID int64) ([]BackupJob, error) {
	var out []BackupJob
	for _, view := range []string{"CDB_OB_BACKUP_JOBS", "CDB_OB_BACKUP_JOB_HISTORY"} {
		rows, err := db.QueryContext(ctx, "SELECT "+backupJobColumns+" FROM oceanbase."+view+" WHERE TENANT_ID = ? ORDER BY JOB_ID", tenantID)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", view, err)
		}
		for rows.Next() {
			var j BackupJob
			var comment, path, start, end sql.NullString
			if err := rows.Scan(&j.JobID, &j.BackupSetID, &j.Type, &j.Status, &j.Result, &comment, &path, &start, &end); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list %s: %w", view, err)
			}
			j.Comment, j.Path = comment.String, path.String
			if t, err := parseTimestamp(start); err == nil && t != nil {
				j.Start = *t
			}
			j.End, _ = parseTimestamp(end)
			out = append(out, j)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", view, err)
		}
	}
	return out, nil
}

// parseTimestamp reads a TIMESTAMP(6) column (UTC), nil when NULL.
func parseTimestamp(v sql.NullString) (*time.Time, error) {
	if !v.Valid || v.String == "" {
		return nil, nil
	}
	t, err := time.Parse("2006-01-02 15:04:05.999999", v.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// onTenant is " TENANT = 'name'", the clause that runs a sys statement on
// a user tenant.
func onTenant(name string) string { return " TENANT = " + quote(name) }

// SetArchiveDest sets the tenant's LOG_ARCHIVE_DEST (OceanBase refuses it
// while the tenant archives).
func SetArchiveDest(ctx context.Context, db *sql.DB, tenant, location, pieceSwitchInterval, binding string) error {
	v := fmt.Sprintf("LOCATION=%s PIECE_SWITCH_INTERVAL=%s BINDING=%s", location, pieceSwitchInterval, binding)
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET LOG_ARCHIVE_DEST = "+quote(v)+onTenant(tenant)); err != nil {
		return fmt.Errorf("set the archive destination of %s: %w", tenant, err)
	}
	return nil
}

// SetArchiveDestState sets LOG_ARCHIVE_DEST_STATE: ENABLE, or DEFER to
// suspend archiving.
func SetArchiveDestState(ctx context.Context, db *sql.DB, tenant, state string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET LOG_ARCHIVE_DEST_STATE = "+quote(state)+onTenant(tenant)); err != nil {
		return fmt.Errorf("set the archive destination state of %s to %s: %w", tenant, state, err)
	}
	return nil
}

// SetDataBackupDest sets the tenant's DATA_BACKUP_DEST.
func SetDataBackupDest(ctx context.Context, db *sql.DB, tenant, dest string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET DATA_BACKUP_DEST = "+quote(dest)+onTenant(tenant)); err != nil {
		return fmt.Errorf("set the data backup destination of %s: %w", tenant, err)
	}
	return nil
}

// ArchiveLog starts archiving (ALTER SYSTEM ARCHIVELOG) or stops it
// (NOARCHIVELOG).
func ArchiveLog(ctx context.Context, db *sql.DB, tenant string, on bool) error {
	verb := "ARCHIVELOG"
	if !on {
		verb = "NOARCHIVELOG"
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM "+verb+onTenant(tenant)); err != nil {
		return fmt.Errorf("%s for %s: %w", verb, tenant, err)
	}
	return nil
}

// SetDeletePolicy replaces the tenant's delete policy 'default' with one
// of the recovery window (dropping the old one first, if any).
func SetDeletePolicy(ctx context.Context, db *sql.DB, tenant, old, window string) error {
	if old != "" {
		if _, err := db.ExecContext(ctx, "ALTER SYSTEM DROP DELETE BACKUP POLICY 'default'"+onTenant(tenant)); err != nil {
			return fmt.Errorf("drop the delete policy of %s: %w", tenant, err)
		}
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM ADD DELETE BACKUP POLICY 'default' RECOVERY_WINDOW "+quote(window)+onTenant(tenant)); err != nil {
		return fmt.Errorf("add the delete policy of %s: %w", tenant, err)
	}
	return nil
}

// BackupOptions are how a backup is taken.
type BackupOptions struct {
	Incremental    bool // else a full backup
	PlusArchivelog bool // the set carries the archive pieces its restore needs
	// Password encrypts the backup set (SET ENCRYPTION ON IDENTIFIED BY
	// ... ONLY, on the session that starts it); "" none.
	Password string
}

// StartBackup starts a backup of the tenant. OceanBase answers once the
// job is recorded; BackupJobs then lists it.
func StartBackup(ctx context.Context, db *sql.DB, tenant string, o BackupOptions) error {
	q := "ALTER SYSTEM BACKUP DATABASE"
	if o.Incremental {
		q = "ALTER SYSTEM BACKUP INCREMENTAL DATABASE"
	}
	if o.PlusArchivelog {
		q += " PLUS ARCHIVELOG"
	}
	var setup []string
	if o.Password != "" {
		setup = append(setup, "SET ENCRYPTION ON IDENTIFIED BY "+quote(o.Password)+" ONLY")
	}
	if err := onOneSession(ctx, db, setup, q+onTenant(tenant)); err != nil {
		return fmt.Errorf("start a backup of %s: %w", tenant, err)
	}
	return nil
}

// onOneSession runs the session statements setup, then q, on one
// connection: OceanBase keeps what SET ENCRYPTION and SET DECRYPTION say
// for the session only. That connection is discarded after, never
// returned to the pool with the session's passwords.
func onOneSession(ctx context.Context, db *sql.DB, setup []string, q string, args ...any) error {
	if len(setup) == 0 {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }()
	for _, s := range setup {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			// The statement carries a password: name its kind only.
			return fmt.Errorf("%s: %w", strings.SplitN(s, " IDENTIFIED", 2)[0], err)
		}
	}
	_, err = conn.ExecContext(ctx, q, args...)
	return err
}

// CancelBackup cancels the tenant's running backup job (ALTER SYSTEM
// CANCEL BACKUP, from sys): it ends CANCELED.
func CancelBackup(ctx context.Context, db *sql.DB, tenant string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM CANCEL BACKUP"+onTenant(tenant)); err != nil {
		return fmt.Errorf("cancel the backup of %s: %w", tenant, err)
	}
	return nil
}

// DestPath is a destination without its query (the keys): what
// OceanBase's views show and what two destinations are compared by.
func DestPath(dest string) string {
	path, _, _ := strings.Cut(dest, "?")
	return strings.TrimSuffix(path, "/")
}
