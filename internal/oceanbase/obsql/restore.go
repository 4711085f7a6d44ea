package obsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RestoreJob is a restore job of CDB_OB_RESTORE_PROGRESS (running) or
// CDB_OB_RESTORE_HISTORY (ended).
type RestoreJob struct {
	JobID, TenantID int64
	// Status is the job's step while it runs; SUCCESS or FAIL once it
	// ended (Ended).
	Status       string
	Ended        bool
	RestoreSCN   int64
	BackupTenant string
	BackupSets   string
	Comment      string
	Start        time.Time
	End          *time.Time
}

// RestoreJobs lists the restore jobs of the tenant called name, running
// then ended, each oldest first.
func RestoreJobs(ctx context.Context, db *sql.DB, name string) ([]RestoreJob, error) {
	var out []RestoreJob
	for _, view := range []string{"CDB_OB_RESTORE_PROGRESS", "CDB_OB_RESTORE_HISTORY"} {
		history := view == "CDB_OB_RESTORE_HISTORY"
		cols := "JOB_ID, RESTORE_TENANT_ID, STATUS, RESTORE_SCN, BACKUP_TENANT_NAME, BACKUP_SET_LIST, DESCRIPTION, START_TIMESTAMP"
		if history {
			cols += ", FINISH_TIMESTAMP"
		}
		rows, err := db.QueryContext(ctx, "SELECT "+cols+" FROM oceanbase."+view+" WHERE RESTORE_TENANT_NAME = ? ORDER BY JOB_ID", name)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", view, err)
		}
		for rows.Next() {
			j := RestoreJob{Ended: history}
			var scn sql.NullInt64
			var backupTenant, sets, comment, start, end sql.NullString
			dest := []any{&j.JobID, &j.TenantID, &j.Status, &scn, &backupTenant, &sets, &comment, &start}
			if history {
				dest = append(dest, &end)
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list %s: %w", view, err)
			}
			j.RestoreSCN, j.BackupTenant, j.BackupSets, j.Comment = scn.Int64, backupTenant.String, sets.String, comment.String
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

// RestoreOptions are a restore's target: the new tenant's pools, primary
// zone and locality, and the point (UntilSCN 0: as far as the archive
// reaches).
type RestoreOptions struct {
	Pools                 []string
	PrimaryZone, Locality string
	UntilSCN              int64
	// Passwords open encrypted backup sets (SET DECRYPTION IDENTIFIED
	// BY, on the session that restores); none: the sets are not
	// encrypted.
	Passwords []string
}

// RestoreTenant starts a physical restore into a new tenant called name
// (ALTER SYSTEM RESTORE, from sys): from the data backup destination and
// the archive one, as OceanBase takes them (with keys).
func RestoreTenant(ctx context.Context, db *sql.DB, name, data, archive string, o RestoreOptions) error {
	if !isIdent(name) {
		return fmt.Errorf("restore a tenant: %q is not a tenant name", name)
	}
	q := "ALTER SYSTEM RESTORE " + name + " FROM ?"
	if o.UntilSCN > 0 {
		q += " UNTIL SCN = " + strconv.FormatInt(o.UntilSCN, 10)
	}
	option := "pool_list=" + strings.Join(o.Pools, ",") + "&primary_zone=" + o.PrimaryZone + "&locality=" + o.Locality
	var setup []string
	if len(o.Passwords) > 0 {
		quoted := make([]string, len(o.Passwords))
		for i, pw := range o.Passwords {
			quoted[i] = quote(pw)
		}
		setup = append(setup, "SET DECRYPTION IDENTIFIED BY "+strings.Join(quoted, ", "))
	}
	if err := onOneSession(ctx, db, setup, q+" WITH ?", data+","+archive, option); err != nil {
		return fmt.Errorf("restore tenant %s: %w", name, err)
	}
	return nil
}

// ActivateStandby makes the standby tenant called name a primary (ALTER
// SYSTEM ACTIVATE STANDBY TENANT, from sys): a failover, or the end of a
// restore.
func ActivateStandby(ctx context.Context, db *sql.DB, name string) error {
	if !isIdent(name) {
		return fmt.Errorf("activate a tenant: %q is not a tenant name", name)
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM ACTIVATE STANDBY TENANT "+name); err != nil {
		return fmt.Errorf("activate tenant %s: %w", name, err)
	}
	return nil
}

// SwitchoverToStandby makes the primary tenant called name a standby
// (ALTER SYSTEM SWITCHOVER TO STANDBY, from sys on its cluster): the
// first half of a switchover.
func SwitchoverToStandby(ctx context.Context, db *sql.DB, name string) error {
	return alterSystemOnTenant(ctx, db, "SWITCHOVER TO STANDBY TENANT = ", name)
}

// SwitchoverToPrimary makes the standby tenant called name the primary
// (ALTER SYSTEM SWITCHOVER TO PRIMARY, from sys on its cluster), once it
// has replayed every commit of its source, which must be a standby by
// then: OceanBase refuses it otherwise.
func SwitchoverToPrimary(ctx context.Context, db *sql.DB, name string) error {
	return alterSystemOnTenant(ctx, db, "SWITCHOVER TO PRIMARY TENANT = ", name)
}

func alterSystemOnTenant(ctx context.Context, db *sql.DB, what, name string) error {
	if !isIdent(name) {
		return fmt.Errorf("%q is not a tenant name", name)
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM "+what+name); err != nil {
		return fmt.Errorf("%s%s: %w", strings.ToLower(what), name, err)
	}
	return nil
}

// SetLogRestoreSource sets the standby tenant's LOG_RESTORE_SOURCE ('SERVICE=...
// USER=... PASSWORD=...').
func SetLogRestoreSource(ctx context.Context, db *sql.DB, tenant, source string) error {
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM SET LOG_RESTORE_SOURCE = ?"+onTenant(tenant), source); err != nil {
		return fmt.Errorf("set the log restore source of %s: %w", tenant, err)
	}
	return nil
}

// RecoverStandby sets how far the standby tenant replays: until SCN
// untilSCN, or without end when it is 0 (UNTIL UNLIMITED).
func RecoverStandby(ctx context.Context, db *sql.DB, tenant string, untilSCN int64) error {
	if !isIdent(tenant) {
		return fmt.Errorf("%q is not a tenant name", tenant)
	}
	until := "UNLIMITED"
	if untilSCN > 0 {
		until = "SCN = " + strconv.FormatInt(untilSCN, 10)
	}
	if _, err := db.ExecContext(ctx, "ALTER SYSTEM RECOVER STANDBY TENANT = "+tenant+" UNTIL "+until); err != nil {
		return fmt.Errorf("recover standby %s until %s: %w", tenant, until, err)
	}
	return nil
}

// LogRestoreSource is a row of CDB_OB_LOG_RESTORE_SOURCE.
type LogRestoreSource struct {
	Value            string
	RecoveryUntilSCN int64
}

// TenantLogRestoreSource reads the tenant's LOG_RESTORE_SOURCE; nil when
// it has none.
func TenantLogRestoreSource(ctx context.Context, db *sql.DB, tenantID int64) (*LogRestoreSource, error) {
	s := &LogRestoreSource{}
	err := db.QueryRowContext(ctx, "SELECT VALUE, RECOVERY_UNTIL_SCN FROM oceanbase.CDB_OB_LOG_RESTORE_SOURCE WHERE TENANT_ID = ?", tenantID).
		Scan(&s.Value, &s.RecoveryUntilSCN)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the log restore source of tenant %d: %w", tenantID, err)
	}
	return s, nil
}
