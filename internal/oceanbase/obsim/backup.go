package obsim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A user tenant's log archive and data backups, as OceanBase 4.x runs them
// (statements on the tenant's own connection, or from sys with TENANT =):
//
//   - LOG_ARCHIVE_DEST names where the archive goes; ALTER SYSTEM
//     ARCHIVELOG starts a round (BEGINNING, then DOING), in which the
//     RootService writes every commit to the destination and advances the
//     round's checkpoint SCN: every commit up to it is archived.
//     LOG_ARCHIVE_DEST_STATE = 'DEFER' suspends the round (SUSPEND),
//     'ENABLE' resumes it; NOARCHIVELOG stops it (STOP). The destination
//     cannot change while a round runs, as in OceanBase.
//   - DATA_BACKUP_DEST names where backup sets go; ALTER SYSTEM BACKUP
//     [INCREMENTAL] DATABASE starts a job (DOING) that writes a backup set
//     at its SCN and ends COMPLETED (moved to the job history), FAILED or
//     CANCELED. Archiving must be on, and an incremental set needs a full
//     one before it.
//
// Simulated: a backup set holds the tenant's committed transactions up to
// its SCN (a full set all of them, an incremental one those after the set
// before it), and the archive holds each commit: restoring either replays
// transactions, where OceanBase copies macro blocks and replays redo. The
// files are the simulator's own JSON; their names follow OceanBase's
// destination layout (format.obbak, backup_set_<id>_<type>/...,
// piece_d<dest>r<round>p<piece>/...).

// Archive round statuses (DBA_OB_ARCHIVELOG.STATUS).
const (
	ArchiveBeginning = "BEGINNING"
	ArchiveDoing     = "DOING"
	ArchiveSuspend   = "SUSPEND"
	ArchiveStop      = "STOP"
)

// Backup job statuses (DBA_OB_BACKUP_JOBS.STATUS).
const (
	BackupDoing     = "DOING"
	BackupCompleted = "COMPLETED"
	BackupFailed    = "FAILED"
	BackupCanceled  = "CANCELED"
)

// archiveDestID is the dest_id of a tenant's first archive destination.
const archiveDestID = 1001

// archiveInterval is how often a DOING round archives and advances its
// checkpoint: the archive lags the commits by up to this (OceanBase's by
// seconds too).
const archiveInterval = time.Second

// TenantBackup is a tenant's archive and backups.
type TenantBackup struct {
	// ArchiveDest is LOG_ARCHIVE_DEST's LOCATION, with its options.
	ArchiveDest         string `json:"archiveDest,omitempty"`
	PieceSwitchInterval string `json:"pieceSwitchInterval,omitempty"`
	Binding             string `json:"binding,omitempty"`
	// ArchiveDestState is LOG_ARCHIVE_DEST_STATE: ENABLE or DEFER.
	ArchiveDestState string `json:"archiveDestState,omitempty"`
	// LogMode is NOARCHIVELOG or ARCHIVELOG (DBA_OB_TENANTS.LOG_MODE).
	LogMode string          `json:"logMode,omitempty"`
	Rounds  []*ArchiveRound `json:"rounds,omitempty"`
	// DataDest is DATA_BACKUP_DEST.
	DataDest string       `json:"dataDest,omitempty"`
	Jobs     []*BackupJob `json:"jobs,omitempty"`
	Sets     []*BackupSet `json:"sets,omitempty"`
	// RecoveryWindow is the delete policy's (empty: none).
	RecoveryWindow string `json:"recoveryWindow,omitempty"`
}

// ArchiveRound is a row of DBA_OB_ARCHIVELOG: one ARCHIVELOG ... NOARCHIVELOG.
type ArchiveRound struct {
	RoundID       int64     `json:"roundID"`
	Status        string    `json:"status"`
	Path          string    `json:"path"`
	StartSCN      int64     `json:"startSCN"`
	CheckpointSCN int64     `json:"checkpointSCN"`
	ReadyAt       time.Time `json:"readyAt"` // when BEGINNING turns DOING
	// Archived counts the commits written; InputBytes their size.
	Archived   int   `json:"archived"`
	InputBytes int64 `json:"inputBytes"`
}

// BackupJob is a row of DBA_OB_BACKUP_JOBS, or of its history once ended.
type BackupJob struct {
	JobID       int64  `json:"jobID"`
	SetID       int64  `json:"setID"`
	Type        string `json:"type"` // FULL or INC
	PlusArchive bool   `json:"plusArchive,omitempty"`
	// PasswordHash is the hash of the password the set is encrypted
	// with; "" unencrypted.
	PasswordHash string     `json:"passwordHash,omitempty"`
	Status       string     `json:"status"`
	Result       int64      `json:"result"`
	Comment      string     `json:"comment,omitempty"`
	Path         string     `json:"path"`
	Start        time.Time  `json:"start"`
	End          *time.Time `json:"end,omitempty"`
	DoneAt       time.Time  `json:"doneAt"`
}

// BackupSet is a row of DBA_OB_BACKUP_SET_FILES.
type BackupSet struct {
	SetID     int64     `json:"setID"`
	Type      string    `json:"type"`
	PrevFull  int64     `json:"prevFull"`
	PrevInc   int64     `json:"prevInc"`
	Path      string    `json:"path"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	StartSCN  int64     `json:"startSCN"` // commits after it are in the set (0 for a full one)
	SCN       int64     `json:"scn"`      // min_restore_scn: the set holds every commit up to it
	Bytes     int64     `json:"bytes"`
	Status    string    `json:"status"` // SUCCESS or FAILED
	FileState string    `json:"fileState"`
}

// backupFile is the content of a backup set's or an archive piece's data
// file: commits.
type backupFile struct {
	Tenant string `json:"tenant"`
	// SetID, Type and StartSCN describe a backup set: the commits after
	// StartSCN up to SCN.
	SetID    int64    `json:"setID,omitempty"`
	Type     string   `json:"type,omitempty"`
	StartSCN int64    `json:"startSCN,omitempty"`
	SCN      int64    `json:"scn"`
	Commits  []Commit `json:"commits"`
	// Users are the tenant's users as of a backup set, which a restore
	// gives the new tenant, as OceanBase's backups hold them.
	Users []User `json:"users,omitempty"`
	// DataVersion is the tenant's compatible as of a backup set, which a
	// restored tenant starts at.
	DataVersion string `json:"dataVersion,omitempty"`
	// PasswordHash is the hash of an encrypted set's password.
	PasswordHash string `json:"passwordHash,omitempty"`
	Name         string `json:"-"` // the set's directory, once read
}

// backupParams are the parameters ALTER SYSTEM SET takes for backups, not
// in GV$OB_PARAMETERS' list.
func isBackupParam(name string) bool {
	switch name {
	case "log_archive_dest", "log_archive_dest_state", "data_backup_dest", "log_archive_concurrency",
		"log_restore_source":
		return true
	}
	return false
}

// setBackupParam sets one of isBackupParam's for tenant t (n.mu held).
func (n *Node) setBackupParam(t *Tenant, name, value string) (*result, *Error) {
	if t.Type != "USER" {
		return nil, notAllowed("%s is set for a user tenant", name)
	}
	b := t.backup()
	switch name {
	case "log_archive_dest":
		opts := parseArchiveDest(value)
		loc := opts["LOCATION"]
		if loc == "" {
			return nil, invalid("Invalid argument: LOG_ARCHIVE_DEST needs LOCATION=")
		}
		if _, err := parseDest(loc); err != nil {
			return nil, invalid("Invalid argument: LOG_ARCHIVE_DEST: %v", err)
		}
		if r := b.round(); r != nil && r.Status != ArchiveStop {
			return nil, notAllowed("log archive is %s: stop it (ALTER SYSTEM NOARCHIVELOG) before changing LOG_ARCHIVE_DEST", r.Status)
		}
		b.ArchiveDest, b.PieceSwitchInterval, b.Binding = loc, opts["PIECE_SWITCH_INTERVAL"], opts["BINDING"]
		if b.PieceSwitchInterval == "" {
			b.PieceSwitchInterval = "1d"
		}
		b.Binding = strings.ToUpper(b.Binding)
		if b.Binding == "" {
			b.Binding = "OPTIONAL"
		}
	case "log_archive_dest_state":
		state := strings.ToUpper(value)
		if state != "ENABLE" && state != "DEFER" {
			return nil, invalid("Invalid argument: LOG_ARCHIVE_DEST_STATE is ENABLE or DEFER")
		}
		b.ArchiveDestState = state
		if r := b.round(); r != nil {
			switch {
			case state == "DEFER" && (r.Status == ArchiveDoing || r.Status == ArchiveBeginning):
				r.Status = ArchiveSuspend
			case state == "ENABLE" && r.Status == ArchiveSuspend:
				r.Status = ArchiveDoing
			}
		}
	case "data_backup_dest":
		if _, err := parseDest(value); err != nil {
			return nil, invalid("Invalid argument: DATA_BACKUP_DEST: %v", err)
		}
		if j := b.runningJob(); j != nil {
			return nil, notAllowed("backup job %d is running: DATA_BACKUP_DEST cannot change", j.JobID)
		}
		b.DataDest = value
	case "log_restore_source":
		return n.setLogSource(t, value)
	case "log_archive_concurrency":
		// Accepted; the simulator archives with one writer.
	}
	return &result{}, nil
}

// parseArchiveDest reads 'LOCATION=... PIECE_SWITCH_INTERVAL=1d BINDING=Optional'.
func parseArchiveDest(v string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(v) {
		k, val, _ := strings.Cut(f, "=")
		out[strings.ToUpper(k)] = val
	}
	return out
}

func (t *Tenant) backup() *TenantBackup {
	if t.Backup == nil {
		t.Backup = &TenantBackup{LogMode: "NOARCHIVELOG", ArchiveDestState: "ENABLE"}
	}
	return t.Backup
}

// round returns the latest archive round, nil if none.
func (b *TenantBackup) round() *ArchiveRound {
	if len(b.Rounds) == 0 {
		return nil
	}
	return b.Rounds[len(b.Rounds)-1]
}

func (b *TenantBackup) runningJob() *BackupJob {
	for _, j := range b.Jobs {
		if j.End == nil {
			return j
		}
	}
	return nil
}

// archiveLog runs ALTER SYSTEM ARCHIVELOG (on true) or NOARCHIVELOG for t
// (n.mu held).
func (n *Node) archiveLog(t *Tenant, on bool, now time.Time) (*result, *Error) {
	b := t.backup()
	r := b.round()
	if !on {
		if b.LogMode != "ARCHIVELOG" {
			return nil, notAllowed("log archive is not on")
		}
		b.LogMode = "NOARCHIVELOG"
		if r != nil {
			r.Status = ArchiveStop
		}
		return &result{}, nil
	}
	if b.LogMode == "ARCHIVELOG" {
		return nil, notAllowed("log archive is already on")
	}
	if b.ArchiveDest == "" {
		return nil, notAllowed("LOG_ARCHIVE_DEST is not set")
	}
	var id int64 = 1
	if r != nil {
		id = r.RoundID + 1
	}
	status := ArchiveBeginning
	if b.ArchiveDestState == "DEFER" {
		status = ArchiveSuspend
	}
	scn := now.UnixNano()
	b.Rounds = append(b.Rounds, &ArchiveRound{RoundID: id, Status: status, Path: displayDest(b.ArchiveDest),
		StartSCN: scn, CheckpointSCN: scn, ReadyAt: now.Add(n.knobs.ArchiveDelay.Duration)})
	b.LogMode = "ARCHIVELOG"
	return &result{}, nil
}

// startBackup runs ALTER SYSTEM BACKUP [INCREMENTAL] DATABASE [PLUS
// ARCHIVELOG] for t (n.mu held).
func (n *Node) startBackup(t *Tenant, typ string, plusArchive bool, passwordHash string, now time.Time) (*result, *Error) {
	b := t.backup()
	switch r := b.round(); {
	case b.DataDest == "":
		return nil, notAllowed("DATA_BACKUP_DEST is not set")
	case b.LogMode != "ARCHIVELOG" || r == nil || r.Status != ArchiveDoing:
		return nil, notAllowed("a data backup needs the log archive DOING")
	case b.runningJob() != nil:
		return nil, notAllowed("backup job %d is running", b.runningJob().JobID)
	case typ == "INC" && b.lastSet("FULL") == nil:
		return nil, notAllowed("an incremental backup needs a full backup set before it")
	}
	s := n.state
	s.NextID++
	job := &BackupJob{JobID: s.NextID, SetID: int64(len(b.Sets) + 1), Type: typ, PlusArchive: plusArchive,
		PasswordHash: passwordHash, Status: BackupDoing, Path: displayDest(b.DataDest), Start: now, DoneAt: now.Add(n.knobs.BackupDelay.Duration)}
	b.Jobs = append(b.Jobs, job)
	return &result{}, nil
}

// lastSet returns the newest successful set of the type ("" for any).
func (b *TenantBackup) lastSet(typ string) *BackupSet {
	for i := len(b.Sets) - 1; i >= 0; i-- {
		if s := b.Sets[i]; s.Status == "SUCCESS" && (typ == "" || s.Type == typ) {
			return s
		}
	}
	return nil
}

// cancelBackup runs ALTER SYSTEM CANCEL BACKUP for t (n.mu held).
func (n *Node) cancelBackup(t *Tenant, now time.Time) (*result, *Error) {
	if j := t.backup().runningJob(); j != nil {
		j.Status, j.End, j.Result, j.Comment = BackupCanceled, ptrTime(now), -4072, "canceled by ALTER SYSTEM CANCEL BACKUP"
	}
	return &result{}, nil
}

// backupWork is destination I/O the RootService does outside its lock:
// commits to archive or a backup set to write.
type backupWork struct {
	tenantID int64
	tenant   string
	dest     string
	name     string // the data file
	marker   string // written after it: the piece's or set's end
	data     backupFile
	// round or job the work advances.
	roundID, jobID int64
	upTo           int64 // the checkpoint SCN, or the set's SCN
	count          int
}

// nextBackupWork collects, under n.mu, at most one piece of work per
// tenant: a backup job due to write its set, or new commits to archive.
func (n *Node) nextBackupWork(now time.Time) []backupWork {
	var out []backupWork
	scn := now.UnixNano()
	for _, t := range n.state.Tenants {
		b := t.Backup
		if b == nil {
			continue
		}
		if j := b.runningJob(); j != nil && !now.Before(j.DoneAt) && !n.knobs.HangBackup {
			from := int64(0)
			if j.Type == "INC" {
				from = b.lastSet("").SCN
			}
			var commits []Commit
			for _, c := range t.Commits {
				if c.SCN > from && c.SCN <= scn {
					commits = append(commits, c)
				}
			}
			dir := fmt.Sprintf("backup_set_%d_%s", j.SetID, strings.ToLower(j.Type))
			out = append(out, backupWork{tenantID: t.ID, tenant: t.Name, dest: b.DataDest, jobID: j.JobID, upTo: scn,
				name: dir + "/logstream_1001/major_data/commits.obbak",
				marker: fmt.Sprintf("backup_sets/backup_set_%d_%s_end_success_%s.obbak", j.SetID,
					strings.ToLower(j.Type), now.UTC().Format("20060102T150405")),
				data: backupFile{Tenant: t.Name, SetID: j.SetID, Type: j.Type, StartSCN: from, SCN: scn, Commits: commits,
					Users: n.state.usersOf(t.ID), DataVersion: n.state.tenantDataVersion(t.ID), PasswordHash: j.PasswordHash}})
			continue
		}
		r := b.round()
		if r == nil || r.Status != ArchiveDoing || scn-r.CheckpointSCN < archiveInterval.Nanoseconds() {
			continue
		}
		var commits []Commit
		for _, c := range t.Commits {
			if c.SCN > r.CheckpointSCN && c.SCN <= scn {
				commits = append(commits, c)
			}
		}
		piece := fmt.Sprintf("piece_d%dr%dp1", archiveDestID, r.RoundID)
		out = append(out, backupWork{tenantID: t.ID, tenant: t.Name, dest: b.ArchiveDest, roundID: r.RoundID, upTo: scn,
			count: len(commits), name: fmt.Sprintf("%s/logstream_1001/log/%d.obarc", piece, r.CheckpointSCN+1),
			marker: piece + "/checkpoint/checkpoint_info.obarc",
			data:   backupFile{Tenant: t.Name, SCN: scn, Commits: commits}})
	}
	return out
}

// doBackupWork writes one piece of work; its error fails a backup job, and
// leaves an archive round where it was, to try again.
func doBackupWork(ctx context.Context, w backupWork) (int64, error) {
	d, err := parseDest(w.dest)
	if err != nil {
		return 0, err
	}
	if w.count == 0 && w.jobID == 0 {
		// Nothing new to archive: only the checkpoint moves.
		return 0, d.put(ctx, w.marker, []byte(fmt.Sprintf(`{"scn":%d}`, w.upTo)))
	}
	b, err := json.Marshal(w.data)
	if err != nil {
		return 0, err
	}
	if err := d.put(ctx, w.name, b); err != nil {
		return 0, err
	}
	return int64(len(b)), d.put(ctx, w.marker, []byte(fmt.Sprintf(`{"scn":%d}`, w.upTo)))
}

// backupDone records work done (n.mu held).
func (n *Node) backupDone(w backupWork, size int64, err error, now time.Time) {
	t := n.state.tenantByID(w.tenantID)
	if t == nil || t.Backup == nil {
		return
	}
	b := t.Backup
	if w.jobID != 0 {
		j := b.runningJob()
		if j == nil || j.JobID != w.jobID {
			return // canceled meanwhile
		}
		j.End = ptrTime(now)
		set := &BackupSet{SetID: j.SetID, Type: j.Type, Path: j.Path, Start: j.Start, End: now, SCN: w.upTo,
			Bytes: size, Status: "SUCCESS", FileState: "AVAILABLE"}
		if j.Type == "INC" {
			last := b.lastSet("")
			set.StartSCN, set.PrevInc = last.SCN, last.SetID
			set.PrevFull = b.lastSet("FULL").SetID
			if last.Type == "FULL" {
				set.PrevInc = 0
			}
		}
		if err != nil {
			j.Status, j.Result, j.Comment = BackupFailed, -4000, err.Error()
			set.Status, set.FileState = "FAILED", "BROKEN"
		} else {
			j.Status = BackupCompleted
		}
		b.Sets = append(b.Sets, set)
		n.changed()
		return
	}
	r := b.round()
	if err != nil || r == nil || r.RoundID != w.roundID || r.Status != ArchiveDoing {
		return
	}
	r.CheckpointSCN, r.Archived, r.InputBytes = w.upTo, r.Archived+w.count, r.InputBytes+size
	n.changed()
}

// tickBackups turns rounds whose start is over DOING (n.mu held).
func (n *Node) tickBackups(now time.Time) {
	for _, t := range n.state.Tenants {
		if r := t.Backup.roundOrNil(); r != nil && r.Status == ArchiveBeginning && !now.Before(r.ReadyAt) {
			r.Status = ArchiveDoing
			n.changed()
		}
	}
}

func (b *TenantBackup) roundOrNil() *ArchiveRound {
	if b == nil {
		return nil
	}
	return b.round()
}

// runBackups does the RootService's destination I/O, one pass at a time,
// outside n.mu.
func (n *Node) runBackups(now time.Time) {
	if !n.backupBusy.CompareAndSwap(false, true) {
		return
	}
	n.mu.Lock()
	work := n.nextBackupWork(now)
	restores := n.dueRestores(now)
	var standbys []standbyWork
	if now.Sub(n.lastReplay) >= replayInterval {
		standbys, n.lastReplay = n.dueStandbys(), now
	}
	n.mu.Unlock()
	go func() {
		defer n.backupBusy.Store(false)
		for _, w := range standbys {
			n.replay(w)
		}
		for _, job := range restores {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			src, err := readRestoreSource(ctx, job)
			cancel()
			if err != nil {
				n.log.Warn("Restore failed", "tenant", job.TenantName, "err", err)
			}
			n.mu.Lock()
			if n.isRS {
				n.restoreDone(job.JobID, src, err, time.Now())
			}
			n.mu.Unlock()
		}
		for _, w := range work {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			size, err := doBackupWork(ctx, w)
			cancel()
			if err != nil {
				n.log.Warn("Cannot write to a backup destination", "tenant", w.tenant, "file", w.name, "err", err)
			}
			n.mu.Lock()
			if n.isRS {
				n.backupDone(w, size, err, time.Now())
			}
			n.mu.Unlock()
		}
	}()
}

// isBackupStatement reports the backup statements a user tenant runs on
// its own connection.
func isBackupStatement(q string) bool {
	up := strings.Join(strings.Fields(strings.ToUpper(q)), " ")
	for _, prefix := range []string{"ALTER SYSTEM ARCHIVELOG", "ALTER SYSTEM NOARCHIVELOG", "ALTER SYSTEM BACKUP ",
		"ALTER SYSTEM CANCEL BACKUP", "ALTER SYSTEM ADD DELETE BACKUP POLICY", "ALTER SYSTEM DROP DELETE BACKUP POLICY",
		"ALTER SYSTEM SET LOG_ARCHIVE_", "ALTER SYSTEM SET DATA_BACKUP_DEST"} {
		if strings.HasPrefix(up, prefix) {
			return true
		}
	}
	return false
}

// mutateBackup runs the backup statements (n.mu held); handled is false for
// any other statement.
func (n *Node) mutateBackup(sess session, p *parser, now time.Time) (res *result, err *Error, handled bool) {
	switch {
	case p.keywords("ALTER", "SYSTEM", "RESTORE"):
		res, err := n.restoreTenant(p, sess.Decryption, now)
		return res, err, true
	case p.keywords("ALTER", "SYSTEM", "ACTIVATE", "STANDBY", "TENANT"):
		res, err := n.activateStandby(p)
		return res, err, true
	case p.keywords("ALTER", "SYSTEM", "RECOVER", "STANDBY", "TENANT"):
		res, err := n.recoverStandby(p)
		return res, err, true
	case p.keywords("ALTER", "SYSTEM", "SWITCHOVER", "TO", "STANDBY", "TENANT"):
		res, err := n.switchoverToStandby(p)
		return res, err, true
	case p.keywords("ALTER", "SYSTEM", "ARCHIVELOG"):
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) { return n.archiveLog(t, true, now) })
	case p.keywords("ALTER", "SYSTEM", "NOARCHIVELOG"):
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) { return n.archiveLog(t, false, now) })
	case p.keywords("ALTER", "SYSTEM", "BACKUP"):
		typ := "FULL"
		if p.keywords("INCREMENTAL") {
			typ = "INC"
		}
		if !p.keywords("DATABASE") {
			return nil, p.syntax(), true
		}
		plus := p.keywords("PLUS", "ARCHIVELOG")
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) { return n.startBackup(t, typ, plus, sess.Encryption, now) })
	case p.keywords("ALTER", "SYSTEM", "CANCEL", "BACKUP"):
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) { return n.cancelBackup(t, now) })
	case p.keywords("ALTER", "SYSTEM", "ADD", "DELETE", "BACKUP", "POLICY"):
		name, err := p.value()
		if err != nil {
			return nil, err, true
		}
		if !p.keywords("RECOVERY_WINDOW") {
			return nil, p.syntax(), true
		}
		window, err := p.value()
		if err != nil {
			return nil, err, true
		}
		if _, perr := parseWindow(window); perr != nil || name != "default" {
			return nil, invalid("Invalid argument: policy 'default' with a RECOVERY_WINDOW such as '7d'"), true
		}
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) {
			if t.backup().RecoveryWindow != "" {
				return nil, errorf(codeEntryExist, "delete policy 'default' already exists")
			}
			t.backup().RecoveryWindow = window
			return &result{}, nil
		})
	case p.keywords("ALTER", "SYSTEM", "DROP", "DELETE", "BACKUP", "POLICY"):
		if _, err := p.value(); err != nil {
			return nil, err, true
		}
		return n.onTenant(sess, p, func(t *Tenant) (*result, *Error) {
			if t.backup().RecoveryWindow == "" {
				return nil, missing("delete policy 'default' does not exist")
			}
			t.backup().RecoveryWindow = ""
			return &result{}, nil
		})
	}
	return nil, nil, false
}

// onTenant runs f on the statement's tenant: the one TENANT [=] names at its
// end (from sys), or the session's own user tenant.
func (n *Node) onTenant(sess session, p *parser, f func(*Tenant) (*result, *Error)) (*result, *Error, bool) {
	name := sess.Tenant
	if p.keywords("TENANT") {
		p.punct('=')
		v, err := p.value()
		if err != nil {
			return nil, err, true
		}
		if !strings.EqualFold(sess.Tenant, sysTenantName) && !strings.EqualFold(v, sess.Tenant) {
			return nil, notAllowed("a user tenant runs this for itself only"), true
		}
		name = v
	}
	if err := p.end(); err != nil {
		return nil, err, true
	}
	t := n.state.tenantByName(name)
	switch {
	case t == nil:
		return nil, missing("Unknown tenant '%s'", name), true
	case t.Type != "USER":
		return nil, notAllowed("tenant '%s' is not a user tenant: name one with TENANT =", name), true
	}
	res, err := f(t)
	return res, err, true
}

// parseWindow reads a recovery window: a number of days ('7d'), hours or
// minutes ('12h', '30m').
func parseWindow(v string) (time.Duration, error) {
	if strings.HasSuffix(v, "d") {
		d, err := time.ParseDuration(strings.TrimSuffix(v, "d") + "h")
		return d * 24, err
	}
	return time.ParseDuration(v)
}
