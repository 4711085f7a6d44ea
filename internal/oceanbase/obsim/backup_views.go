package obsim

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// backupView answers the archive and backup views (backup.go): DBA_OB_*
// with the session's tenant's rows, CDB_OB_* (sys) with every tenant's and
// a tenant_id column first.
func (s *State) backupView(name string, tenantID int64) (table, bool) {
	cdb := strings.HasPrefix(name, "CDB_OB_")
	if cdb && tenantID != sysTenantID {
		return table{}, false
	}
	base := "DBA_OB_" + strings.TrimPrefix(strings.TrimPrefix(name, "CDB_OB_"), "DBA_OB_")
	var t table
	switch base {
	case "DBA_OB_ARCHIVE_DEST":
		t.cols = []string{"dest_no", "name", "value"}
	case "DBA_OB_BACKUP_PARAMETER":
		t.cols = []string{"name", "value"}
	case "DBA_OB_ARCHIVELOG", "DBA_OB_ARCHIVELOG_SUMMARY":
		t.cols = archiveCols
	case "DBA_OB_BACKUP_JOBS", "DBA_OB_BACKUP_JOB_HISTORY":
		t.cols = jobCols
	case "DBA_OB_BACKUP_SET_FILES":
		t.cols = setCols
	case "DBA_OB_BACKUP_DELETE_POLICY":
		t.cols = []string{"policy_name", "recovery_window"}
	default:
		return table{}, false
	}
	for _, tn := range s.Tenants {
		if tn.Type != "USER" || (!cdb && tn.ID != tenantID) {
			continue
		}
		for _, row := range tenantBackupRows(base, tn.backupOrEmpty()) {
			if cdb {
				row = append([]any{tn.ID}, row...)
			}
			t.rows = append(t.rows, row)
		}
	}
	if cdb {
		t.cols = append([]string{"tenant_id"}, t.cols...)
	}
	return t, true
}

func (t *Tenant) backupOrEmpty() *TenantBackup {
	if t.Backup == nil {
		return &TenantBackup{LogMode: "NOARCHIVELOG", ArchiveDestState: "ENABLE"}
	}
	return t.Backup
}

var archiveCols = []string{"dest_id", "round_id", "dest_no", "status", "start_scn", "start_scn_display",
	"checkpoint_scn", "checkpoint_scn_display", "compatible", "base_piece_id", "used_piece_id",
	"piece_switch_interval", "input_bytes", "input_bytes_display", "output_bytes", "output_bytes_display",
	"compression_ratio", "deleted_input_bytes", "deleted_input_bytes_display", "deleted_output_bytes",
	"deleted_output_bytes_display", "comment", "path"}

var jobCols = []string{"job_id", "executor_tenant_id", "job_level", "start_timestamp", "end_timestamp", "status",
	"result", "comment", "backup_set_id", "plus_archivelog", "backup_type", "encryption_mode", "passwd", "path"}

var setCols = []string{"backup_set_id", "dest_id", "incarnation", "backup_type", "prev_full_backup_set_id",
	"prev_inc_backup_set_id", "start_timestamp", "end_timestamp", "status", "file_status", "description",
	"start_replay_scn", "start_replay_scn_display", "min_restore_scn", "min_restore_scn_display", "total_bytes",
	"path"}

// scnDisplay shows an SCN as OceanBase's *_display columns do: the time it
// stands for.
func scnDisplay(scn int64) string {
	return time.Unix(0, scn).UTC().Format("2006-01-02 15:04:05.000000")
}

func tenantBackupRows(view string, b *TenantBackup) [][]any {
	var rows [][]any
	switch view {
	case "DBA_OB_ARCHIVE_DEST":
		if b.ArchiveDest == "" {
			return nil
		}
		for _, kv := range [][2]string{{"path", displayDest(b.ArchiveDest)}, {"piece_switch_interval", b.PieceSwitchInterval},
			{"binding", b.Binding}, {"state", b.ArchiveDestState}, {"dest_id", formatInt(archiveDestID)}} {
			rows = append(rows, []any{int64(1), kv[0], kv[1]})
		}
	case "DBA_OB_BACKUP_PARAMETER":
		rows = append(rows, []any{"data_backup_dest", displayDest(b.DataDest)})
	case "DBA_OB_ARCHIVELOG", "DBA_OB_ARCHIVELOG_SUMMARY":
		for _, r := range b.Rounds {
			if view == "DBA_OB_ARCHIVELOG" && r.Status == ArchiveStop {
				continue // the summary keeps stopped rounds, the live view does not
			}
			var ratio any
			if r.InputBytes > 0 {
				ratio = 1.0
			}
			rows = append(rows, []any{int64(archiveDestID), r.RoundID, int64(1), r.Status, r.StartSCN, scnDisplay(r.StartSCN),
				r.CheckpointSCN, scnDisplay(r.CheckpointSCN), "4.3.5.0", int64(1), int64(1), b.PieceSwitchInterval,
				r.InputBytes, formatBytes(r.InputBytes), r.InputBytes, formatBytes(r.InputBytes), ratio,
				int64(0), "0.00MB", int64(0), "0.00MB", "", r.Path})
		}
	case "DBA_OB_BACKUP_JOBS", "DBA_OB_BACKUP_JOB_HISTORY":
		for _, j := range b.Jobs {
			if (j.End == nil) != (view == "DBA_OB_BACKUP_JOBS") {
				continue
			}
			var end any
			if j.End != nil {
				end = *j.End
			}
			rows = append(rows, []any{j.JobID, int64(0), "USER_TENANT", j.Start, end, j.Status, j.Result, j.Comment,
				j.SetID, yesNo(j.PlusArchive), j.Type, encryptionMode(j.PasswordHash), "", j.Path})
		}
	case "DBA_OB_BACKUP_SET_FILES":
		for _, st := range b.Sets {
			rows = append(rows, []any{st.SetID, int64(archiveDestID), int64(1), st.Type, st.PrevFull, st.PrevInc,
				st.Start, st.End, st.Status, st.FileState, "", st.StartSCN, scnDisplay(st.StartSCN), st.SCN,
				scnDisplay(st.SCN), st.Bytes, st.Path})
		}
	case "DBA_OB_BACKUP_DELETE_POLICY":
		if b.RecoveryWindow != "" {
			rows = append(rows, []any{"default", b.RecoveryWindow})
		}
	}
	return slices.Clip(rows)
}

// formatBytes shows a size as OceanBase's *_display columns do.
func formatBytes(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + "MB"
}
