package obsim

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A physical restore, as OceanBase 4.x runs it from sys:
//
//	ALTER SYSTEM RESTORE <tenant> FROM '<data dest>,<archive dest>'
//	  [UNTIL TIME = '<time>' | UNTIL SCN = <scn>] WITH 'pool_list=...&primary_zone=...&locality=...'
//
// makes a new tenant (status RESTORE, role RESTORE) and a job in
// CDB_OB_RESTORE_PROGRESS; the RootService reads the destinations (the
// newest full backup set at or before the point, the incremental sets
// after it, then the archive up to the point, which must reach it), and
// the tenant becomes NORMAL with the role STANDBY, holding exactly the
// commits up to the point, and the job moves to CDB_OB_RESTORE_HISTORY
// (SUCCESS, or FAIL with the reason, the tenant then RESTORE_FAIL).
// ALTER SYSTEM ACTIVATE STANDBY TENANT makes it PRIMARY; until then it is
// read only. A restore without UNTIL goes to the archive's checkpoint.

// Tenant roles (DBA_OB_TENANTS.TENANT_ROLE).
const (
	RolePrimary = "PRIMARY"
	RoleStandby = "STANDBY"
	RoleRestore = "RESTORE"
)

// Restore statuses: the job's in progress, then its outcome in history.
const (
	RestoreDoing   = "PHYSICAL_RESTORE"
	RestoreSuccess = "SUCCESS"
	RestoreFail    = "FAIL"
)

// TenantRestoreFailed is DBA_OB_TENANTS.STATUS of a tenant whose restore
// failed; it can only be dropped.
const TenantRestoreFailed = "RESTORE_FAIL"

// RestoreJob is a row of CDB_OB_RESTORE_PROGRESS, or of its history once
// finished.
type RestoreJob struct {
	JobID      int64  `json:"jobID"`
	TenantID   int64  `json:"tenantID"`
	TenantName string `json:"tenantName"`
	DataDest   string `json:"dataDest"`
	ArchDest   string `json:"archDest,omitempty"`
	Option     string `json:"option"`
	UntilSCN   int64  `json:"untilSCN"` // 0: the archive's checkpoint
	// Decryption are the hashes of the passwords the restore may open
	// encrypted backup sets with (its session's SET DECRYPTION).
	Decryption []string   `json:"decryption,omitempty"`
	RestoreSCN int64      `json:"restoreSCN"`
	Status     string     `json:"status"`
	Comment    string     `json:"comment,omitempty"`
	Start      time.Time  `json:"start"`
	End        *time.Time `json:"end,omitempty"`
	DoneAt     time.Time  `json:"doneAt"`
	// Sets and Pieces are what the restore read.
	Sets   string `json:"sets,omitempty"`
	Pieces string `json:"pieces,omitempty"`
	// BackupTenant is the name of the tenant the backup was taken from.
	BackupTenant string `json:"backupTenant,omitempty"`
}

// restoreTenant runs ALTER SYSTEM RESTORE (n.mu held; sys only).
func (n *Node) restoreTenant(p *parser, decryption []string, now time.Time) (*result, *Error) {
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	if !p.keywords("FROM") {
		return nil, p.syntax()
	}
	uris, err := p.value()
	if err != nil {
		return nil, err
	}
	var until int64
	if p.keywords("UNTIL") {
		switch {
		case p.keywords("TIME"):
			p.punct('=')
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			at, perr := time.Parse("2006-01-02 15:04:05.999999999", v)
			if perr != nil {
				return nil, invalid("Invalid argument: UNTIL TIME '%s' is not 'YYYY-MM-DD HH:MM:SS[.ffffff]'", v)
			}
			until = at.UnixNano()
		case p.keywords("SCN"):
			p.punct('=')
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			scn, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || scn <= 0 {
				return nil, invalid("Invalid argument: UNTIL SCN %s", v)
			}
			until = scn
		default:
			return nil, p.syntax()
		}
	}
	if !p.keywords("WITH") {
		return nil, p.syntax()
	}
	option, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	opts := map[string]string{}
	for _, kv := range strings.Split(option, "&") {
		k, v, _ := strings.Cut(kv, "=")
		opts[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	data, arch, _ := strings.Cut(uris, ",")
	for _, d := range []string{data, arch} {
		if d == "" {
			continue
		}
		if _, derr := parseDest(d); derr != nil {
			return nil, invalid("Invalid argument: restore source: %v", derr)
		}
	}
	if n.state.tenantByName(name) != nil {
		return nil, errorf(5157, "tenant '%s' already exists", name)
	}
	if opts["pool_list"] == "" {
		return nil, invalid("Invalid argument: the restore option needs pool_list")
	}
	t, err := n.addTenant(name, strings.Split(opts["pool_list"], ","), opts["locality"], opts["primary_zone"], "utf8mb4")
	if err != nil {
		return nil, err
	}
	t.Status, t.Role, t.DoneAt = RoleRestore, RoleRestore, nil
	if meta := n.state.tenantByID(t.ID - 1); meta != nil {
		meta.Status, meta.DoneAt = TenantNormal, nil
	}
	s := n.state
	s.NextID++
	s.Restores = append(s.Restores, &RestoreJob{JobID: s.NextID, TenantID: t.ID, TenantName: name, DataDest: data,
		ArchDest: arch, Option: option, UntilSCN: until, Decryption: decryption, Status: RestoreDoing, Start: now,
		DoneAt: now.Add(n.knobs.RestoreDelay.Duration)})
	return &result{}, nil
}

// activateStandby runs ALTER SYSTEM ACTIVATE STANDBY TENANT [=] name (n.mu
// held).
func (n *Node) activateStandby(p *parser) (*result, *Error) {
	name, err := tenantOperand(p)
	if err != nil {
		return nil, err
	}
	t, err := n.state.userTenant(name)
	switch {
	case err != nil:
		return nil, err
	case t.role() == RolePrimary:
		return nil, notAllowed("tenant '%s' is already PRIMARY", name)
	case t.Status != TenantNormal:
		return nil, notAllowed("tenant '%s' is %s", name, t.Status)
	}
	t.Role, t.Source, t.RecoveryUntilSCN = RolePrimary, nil, 0
	return &result{}, nil
}

// role returns the tenant's role; an empty one is PRIMARY.
func (t *Tenant) role() string {
	if t.Role == "" {
		return RolePrimary
	}
	return t.Role
}

// restoreSource is what a restore read from the destinations.
type restoreSource struct {
	commits      []Commit
	scn          int64
	sets, pieces []string
	tenant       string
	users        []User
	dataVersion  string
}

// readRestoreSource reads, outside n.mu, the commits up to until (0: the
// archive's checkpoint) from a data destination and an archive one.
func readRestoreSource(ctx context.Context, job RestoreJob) (restoreSource, error) {
	var src restoreSource
	data, err := parseDest(job.DataDest)
	if err != nil {
		return src, err
	}
	names, err := data.list(ctx, "")
	if err != nil {
		return src, fmt.Errorf("listing the backup destination: %w", err)
	}
	var sets []backupFile
	for _, name := range names {
		if !strings.HasSuffix(name, "/major_data/commits.obbak") {
			continue
		}
		var f backupFile
		b, err := data.get(ctx, name)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			return src, fmt.Errorf("reading backup set file %s: %w", name, err)
		}
		f.Name = path.Dir(path.Dir(path.Dir(name)))
		sets = append(sets, f)
	}
	slices.SortFunc(sets, func(a, b backupFile) int { return int(a.SetID - b.SetID) })

	// The archive: every commit in it, and how far it reaches.
	var a archive
	if job.ArchDest != "" {
		if a, err = readArchive(ctx, job.ArchDest); err != nil {
			return src, err
		}
	}
	archived, checkpoint := a.commits, a.checkpoint
	src.pieces = a.pieces
	until := job.UntilSCN
	if until == 0 {
		until = checkpoint
	}

	// The newest full set at or before the point, then its incremental
	// sets at or before it.
	var chain []backupFile
	for _, f := range sets {
		switch {
		case f.SCN > until:
		case f.Type == "FULL":
			chain = []backupFile{f}
		case len(chain) > 0 && f.StartSCN == chain[len(chain)-1].SCN:
			chain = append(chain, f)
		}
	}
	if len(chain) == 0 {
		return src, fmt.Errorf("no full backup set at or before SCN %d in the backup destination", until)
	}
	for _, f := range chain {
		if !opens(job.Decryption, f.PasswordHash) {
			return src, fmt.Errorf("backup set %d is encrypted: SET DECRYPTION IDENTIFIED BY its password before the restore", f.SetID)
		}
		src.users, src.dataVersion = f.Users, f.DataVersion
		src.commits = append(src.commits, f.Commits...)
		src.sets = append(src.sets, f.Name)
		src.tenant = f.Tenant
	}
	from := chain[len(chain)-1].SCN
	if until > from {
		if checkpoint < until {
			return src, fmt.Errorf("the archive reaches SCN %d, before the restore point %d", checkpoint, until)
		}
		slices.SortFunc(archived, func(a, b Commit) int { return int(a.SCN - b.SCN) })
		for _, c := range archived {
			if c.SCN > from && c.SCN <= until && (len(src.commits) == 0 || c.SCN > src.commits[len(src.commits)-1].SCN) {
				src.commits = append(src.commits, c)
			}
		}
	}
	src.scn = until
	return src, nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// restoreDone records a restore's outcome (n.mu held).
func (n *Node) restoreDone(jobID int64, src restoreSource, rerr error, now time.Time) {
	var job *RestoreJob
	for _, j := range n.state.Restores {
		if j.JobID == jobID && j.End == nil {
			job = j
		}
	}
	if job == nil {
		return
	}
	t := n.state.tenantByID(job.TenantID)
	job.End = ptrTime(now)
	job.Sets, job.Pieces, job.BackupTenant = strings.Join(src.sets, ","), strings.Join(src.pieces, ","), src.tenant
	if rerr != nil || t == nil {
		job.Status = RestoreFail
		if rerr != nil {
			job.Comment = rerr.Error()
		}
		if t != nil {
			t.Status = TenantRestoreFailed
		}
	} else {
		job.Status, job.RestoreSCN = RestoreSuccess, src.scn
		t.Commits, t.Status, t.Role, t.RecoveryUntilSCN = src.commits, TenantNormal, RoleStandby, src.scn
		s := n.state
		s.Users = slices.DeleteFunc(s.Users, func(u *User) bool { return u.TenantID == t.ID })
		for _, u := range src.users {
			u.TenantID = t.ID
			s.Users = append(s.Users, &u)
		}
		if src.dataVersion != "" {
			s.setDataVersion(t.ID, src.dataVersion)
		}
		delete(n.engines, t.ID)
	}
	n.changed()
}

// dueRestores returns the restore jobs due to read their sources (n.mu
// held).
func (n *Node) dueRestores(now time.Time) []RestoreJob {
	var out []RestoreJob
	for _, j := range n.state.Restores {
		if j.End == nil && !now.Before(j.DoneAt) {
			out = append(out, *j)
		}
	}
	return out
}

var restoreCols = []string{"tenant_id", "job_id", "restore_tenant_name", "restore_tenant_id", "backup_tenant_name",
	"backup_tenant_id", "backup_cluster_name", "backup_dest", "restore_option", "restore_scn", "restore_scn_display",
	"status", "start_timestamp", "backup_set_list", "backup_piece_list", "total_bytes", "total_bytes_display",
	"finish_bytes", "finish_bytes_display", "description"}

// restoreView answers CDB_OB_RESTORE_PROGRESS and CDB_OB_RESTORE_HISTORY
// (sys only).
func (s *State) restoreView(name string, tenantID int64) (table, bool) {
	history := name == "CDB_OB_RESTORE_HISTORY"
	if (!history && name != "CDB_OB_RESTORE_PROGRESS") || tenantID != sysTenantID {
		return table{}, false
	}
	t := table{cols: slices.Clone(restoreCols)}
	if history {
		t.cols = append(t.cols, "finish_timestamp", "backup_cluster_version", "ls_count", "finish_ls_count",
			"tablet_count", "finish_tablet_count")
	}
	for _, j := range s.Restores {
		if (j.End != nil) != history {
			continue
		}
		var scn, display, comment any
		if j.RestoreSCN != 0 {
			scn, display = j.RestoreSCN, scnDisplay(j.RestoreSCN)
		} else if j.UntilSCN != 0 {
			scn, display = j.UntilSCN, scnDisplay(j.UntilSCN)
		}
		if j.Comment != "" {
			comment = j.Comment
		}
		row := []any{int64(sysTenantID), j.JobID, j.TenantName, j.TenantID, j.BackupTenant, int64(0), "",
			displayDest(j.DataDest) + "," + displayDest(j.ArchDest), j.Option, scn, display, j.Status, j.Start, j.Sets,
			j.Pieces, nil, nil, nil, nil, comment}
		if history {
			row = append(row, *j.End, "4.3.5.0", int64(1), int64(1), int64(1), int64(1))
		}
		t.rows = append(t.rows, row)
	}
	return t, true
}

// archive is what an archive destination holds.
type archive struct {
	commits    []Commit // every commit in its pieces, in no order
	checkpoint int64    // how far it reaches: every commit up to it is in commits
	pieces     []string
}

// readArchive reads, outside n.mu, an archive destination's pieces.
func readArchive(ctx context.Context, uri string) (archive, error) {
	var a archive
	arch, err := parseDest(uri)
	if err != nil {
		return a, err
	}
	names, err := arch.list(ctx, "")
	if err != nil {
		return a, fmt.Errorf("listing the archive destination: %w", err)
	}
	for _, name := range names {
		b, err := arch.get(ctx, name)
		if err != nil {
			return a, fmt.Errorf("reading archive file %s: %w", name, err)
		}
		switch {
		case strings.HasSuffix(name, "/checkpoint/checkpoint_info.obarc"):
			var cp struct {
				SCN int64 `json:"scn"`
			}
			if err := json.Unmarshal(b, &cp); err != nil {
				return a, fmt.Errorf("reading %s: %w", name, err)
			}
			a.checkpoint = max(a.checkpoint, cp.SCN)
			a.pieces = appendNew(a.pieces, strings.SplitN(name, "/", 2)[0])
		case strings.Contains(name, "/log/"):
			var f backupFile
			if err := json.Unmarshal(b, &f); err != nil {
				return a, fmt.Errorf("reading %s: %w", name, err)
			}
			a.commits = append(a.commits, f.Commits...)
		}
	}
	return a, nil
}
