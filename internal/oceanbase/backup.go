package oceanbase

import (
	"database/sql"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The backup controller's RBAC.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackups,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackups/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackups/finalizers,verbs=update

// TenantBackup is the kind the backup controller reconciles.
type TenantBackup = obv1.OBTenantBackup

// BackupContext is the framework's pass context of an OBTenantBackup.
type BackupContext = framework.Context[*TenantBackup]

// Bounds of finding a backup's job in OceanBase.
const (
	// jobClockSlack is how long before status.requestedAt a job may have
	// started and still be the backup's: the observers' clocks and the
	// manager's may differ by this much.
	jobClockSlack = 30 * time.Second
	// resendAfter is how long a backup statement this process sent, whose
	// job OceanBase does not list, waits before it is sent again (its
	// answer was lost before OceanBase recorded it).
	resendAfter = time.Minute
)

// TenantBackupController is the OBTenantBackup actor. A backup runs one
// ALTER SYSTEM BACKUP [INCREMENTAL] DATABASE, once: it waits behind an
// older unfinished backup of the same tenant, and for the tenant to
// archive (OceanBase refuses a backup otherwise); it writes
// status.requestedAt before sending the statement, then takes as its job
// the first of the type OceanBase lists as started since (less the
// clocks' slack) that no other OBTenantBackup of the tenant holds. A
// manager that restarts after sending finds the job instead of starting
// another. It follows the job until it ends; a job that fails or is
// canceled is not retried (the record says so; a schedule takes the next).
type TenantBackupController struct {
	opts   Options
	logins *logins
	mu     sync.Mutex
	sent   map[types.UID]time.Time // when this process last sent a backup's statement
}

// NewTenantBackupController returns a backup controller.
func NewTenantBackupController(opts Options) *TenantBackupController {
	opts = opts.withDefaults()
	return &TenantBackupController{opts: opts, logins: newLogins(opts), sent: map[types.UID]time.Time{}}
}

func setupTenantBackups(mgr ctrl.Manager, opts Options) error {
	c := NewTenantBackupController(opts)
	_, err := framework.Setup(mgr, framework.Options[*TenantBackup, *backupState]{
		Actor: c, App: build.BackupApp, PartOf: build.PartOf,
		Resync: c.opts.Resync, ResyncNotReady: transitionPoll,
	})
	return err
}

// Default applies the API's defaults (obv1.DefaultBackup).
func (*TenantBackupController) Default(b *TenantBackup) { obv1.DefaultBackup(b) }

// Dependencies returns the backup's tenant, which must be NORMAL; a
// finished backup depends on nothing: it is a record.
func (*TenantBackupController) Dependencies(ctx *BackupContext) ([]framework.Dependency, error) {
	if backupFinished(ctx.Obj) {
		return nil, nil
	}
	return normalTenant(ctx.Obj.Spec.Tenant), nil
}

// backupState is what a pass read of a backup's tenant.
type backupState struct {
	db     *sql.DB
	tenant *Tenant
	// queuedBehind is an older unfinished backup of the same tenant.
	queuedBehind string
	// waiting says why OceanBase would refuse a backup now, "" when it
	// would not.
	waiting string
	// job is the backup's job, nil before it is found.
	job *obsql.BackupJob
}

// Declare finds the backup's job in OceanBase and writes it into status,
// and sets Ready. A finished backup reads nothing.
func (c *TenantBackupController) Declare(ctx *BackupContext) (*backupState, error) {
	b := ctx.Obj
	if backupFinished(b) {
		setBackupReady(ctx)
		return nil, nil
	}
	st, err := c.observe(ctx)
	if err != nil {
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil
	}
	if j := st.job; j != nil {
		s := &b.Status
		s.JobID, s.JobStatus, s.BackupSetID, s.Path = j.JobID, j.Status, j.BackupSetID, obsql.DestPath(j.Path)
		s.StartedAt = &metav1.Time{Time: j.Start}
		s.CompletedAt, s.Result = nil, ""
		if j.End != nil {
			s.CompletedAt = &metav1.Time{Time: *j.End}
		}
		if j.Status == obv1.BackupJobFailed || j.Status == obv1.BackupJobCanceled {
			s.Result = fmt.Sprintf("result %d: %s", j.Result, j.Comment)
		}
		c.recordEnd(ctx, j)
	}
	switch {
	case backupFinished(b):
		setBackupReady(ctx)
	case b.Spec.Cancel && st.job != nil:
		ctx.SetReady(false, obv1.ReasonBackupCanceled, fmt.Sprintf("canceling OceanBase's backup job %d (%s)", st.job.JobID, st.job.Status))
	case b.Spec.Cancel:
		ctx.SetReady(false, obv1.ReasonBackupCanceled, "canceled: waiting to see whether OceanBase started the job requested at "+
			b.Status.RequestedAt.UTC().Format(time.RFC3339))
	case st.job != nil:
		ctx.SetReady(false, obv1.ReasonBackupRunning, fmt.Sprintf("OceanBase's backup job %d is %s", st.job.JobID, st.job.Status))
	case st.queuedBehind != "":
		ctx.SetReady(false, obv1.ReasonBackupQueued, fmt.Sprintf("waiting for the OBTenantBackup %s of the same tenant to finish", st.queuedBehind))
	case st.waiting != "":
		ctx.SetReady(false, obv1.ReasonArchiveNotRunning, st.waiting)
	default:
		ctx.SetReady(false, obv1.ReasonBackupRunning, "starting the backup")
	}
	return st, nil
}

// recordEnd records the Event of a job that ended in this pass.
func (c *TenantBackupController) recordEnd(ctx *BackupContext, j *obsql.BackupJob) {
	switch j.Status {
	case obv1.BackupJobCompleted:
		ctx.Log.Info("Backup completed", "job", j.JobID, "backupSet", j.BackupSetID)
		ctx.Event(corev1.EventTypeNormal, obv1.EventBackupCompleted, "OceanBase's backup job %d completed backup set %d", j.JobID, j.BackupSetID)
	case obv1.BackupJobCanceled, obv1.BackupJobFailed:
		if j.Status == obv1.BackupJobCanceled && ctx.Obj.Spec.Cancel {
			ctx.Event(corev1.EventTypeNormal, obv1.EventBackupCanceled, "OceanBase's backup job %d was canceled, as spec.cancel asked", j.JobID)
			return
		}
		ctx.Event(corev1.EventTypeWarning, obv1.EventBackupFailed, "OceanBase's backup job %d ended %s: %s", j.JobID, j.Status, ctx.Obj.Status.Result)
	}
}

// setBackupReady sets Ready of a finished backup from its status.
func setBackupReady(ctx *BackupContext) {
	s := &ctx.Obj.Status
	if canceledBeforeStart(ctx.Obj) {
		ctx.SetReady(false, obv1.ReasonBackupCanceled, "canceled before OceanBase started a job")
		return
	}
	if s.JobStatus == obv1.BackupJobCanceled && ctx.Obj.Spec.Cancel {
		ctx.SetReady(false, obv1.ReasonBackupCanceled, fmt.Sprintf("canceled: OceanBase's backup job %d ended CANCELED", s.JobID))
		return
	}
	if s.JobStatus == obv1.BackupJobCompleted {
		ctx.SetReady(true, "", fmt.Sprintf("backup set %d, completed by job %d", s.BackupSetID, s.JobID))
		return
	}
	ctx.SetReady(false, obv1.ReasonBackupFailed, fmt.Sprintf("OceanBase's backup job %d ended %s (%s)", s.JobID, s.JobStatus, s.Result))
}

func (c *TenantBackupController) observe(ctx *BackupContext) (*backupState, error) {
	b := ctx.Obj
	st := &backupState{}
	var others obv1.OBTenantBackupList
	if err := ctx.Client.List(ctx, &others, client.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("list OBTenantBackups: %w", err)
	}
	held := map[int64]bool{}
	for i := range others.Items {
		o := &others.Items[i]
		if o.UID == b.UID || o.Spec.Tenant != b.Spec.Tenant {
			continue
		}
		if o.Status.JobID != 0 {
			held[o.Status.JobID] = true
		}
		// One backup of a tenant at a time: the one with a job, else the
		// oldest.
		if b.Status.JobID == 0 && !backupFinished(o) && (o.Status.JobID != 0 || framework.Older(o, b)) && st.queuedBehind == "" {
			st.queuedBehind = o.Name
		}
	}
	t, ob, db, err := tenantLogin(ctx, ctx.Client, ctx.Reader, c.logins, backupHolder(b), ctx.Dependencies[0])
	if err != nil {
		return nil, err
	}
	st.tenant = t
	id := t.Status.TenantID
	jobs, err := obsql.BackupJobs(ctx, db, id)
	var round *obsql.ArchiveRound
	var dataDest string
	if err == nil {
		round, err = obsql.LatestArchiveRound(ctx, db, id)
	}
	if err == nil {
		dataDest, err = obsql.TenantDataBackupDest(ctx, db, id)
	}
	if err != nil {
		c.logins.drop(ob.UID, db)
		return nil, err
	}
	st.db = db
	switch {
	case round == nil || round.Status != obv1.ArchiveDoing:
		st.waiting = "waiting for the tenant to archive its log (an OBTenantBackupPolicy starts it): OceanBase refuses a backup before"
	case dataDest == "":
		st.waiting = "waiting for the tenant's data backup destination (an OBTenantBackupPolicy sets it)"
	}
	st.job = ownJob(b, jobs, held)
	return st, nil
}

// ownJob is the backup's job among jobs: the one of status.jobID, or,
// once the statement may have been sent, the first of its type started
// since status.requestedAt (less jobClockSlack) that no other backup
// holds.
func ownJob(b *TenantBackup, jobs []obsql.BackupJob, held map[int64]bool) *obsql.BackupJob {
	typ := "FULL"
	if b.Spec.Type == obv1.BackupIncremental {
		typ = "INC"
	}
	var best *obsql.BackupJob
	for i := range jobs {
		j := &jobs[i]
		switch {
		case b.Status.JobID != 0:
			if j.JobID == b.Status.JobID {
				return j
			}
		case b.Status.RequestedAt == nil || j.Type != typ || held[j.JobID]:
		case j.Start.Before(b.Status.RequestedAt.Add(-jobClockSlack)):
		case best == nil || j.JobID < best.JobID:
			best = j
		}
	}
	return best
}

// backupHolder names the backup's passes as a user of its cluster's login.
func backupHolder(b *TenantBackup) string { return holderOf("OBTenantBackup", b.UID) }

// Observe writes status.requestedAt, then sends the backup statement once
// OceanBase would take it; a backup with a job only follows it (Declare),
// or, canceled, cancels it; a canceled one with none starts none.
func (c *TenantBackupController) Observe(ctx *BackupContext, st *backupState) (framework.Action[*TenantBackup], error) {
	b := ctx.Obj
	switch {
	case st != nil && st.job != nil && b.Spec.Cancel && !st.job.Finished() && st.job.Status != obv1.BackupJobCanceling:
		return framework.Named("CancelBackup", func(ctx *BackupContext) error {
			ctx.Log.Info("Canceling the backup", "job", st.job.JobID)
			return obsql.CancelBackup(ctx, st.db, st.tenant.Spec.TenantName)
		}), nil
	case st == nil || st.job != nil || st.queuedBehind != "" || st.waiting != "" || b.Spec.Cancel:
		return nil, nil
	case b.Status.RequestedAt == nil:
		return framework.Named("RequestBackup", func(*BackupContext) error {
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			b.Status.RequestedAt = &now
			return nil
		}), nil
	}
	c.mu.Lock()
	sent, ok := c.sent[b.UID]
	c.mu.Unlock()
	if ok && time.Since(sent) < resendAfter {
		return nil, nil // sent: OceanBase lists the job on a later pass
	}
	return framework.Named("StartBackup", func(ctx *BackupContext) error {
		c.mu.Lock()
		c.sent[b.UID] = time.Now()
		c.mu.Unlock()
		opts := obsql.BackupOptions{Incremental: b.Spec.Type == obv1.BackupIncremental, PlusArchivelog: b.Spec.PlusArchivelog}
		if b.Spec.EncryptionSecret != "" {
			pw, err := framework.ReadPassword(ctx, ctx.Reader, b.Namespace, b.Spec.EncryptionSecret)
			if err != nil {
				c.mu.Lock()
				delete(c.sent, b.UID)
				c.mu.Unlock()
				return err
			}
			opts.Password = pw
		}
		if err := obsql.StartBackup(ctx, st.db, st.tenant.Spec.TenantName, opts); err != nil {
			if obsql.Refused(err) {
				// OceanBase answered: no job was started.
				c.mu.Lock()
				delete(c.sent, b.UID)
				c.mu.Unlock()
			}
			return err
		}
		ctx.Event(corev1.EventTypeNormal, obv1.EventBackupStarted, "Started a %s backup of %s", b.Spec.Type, st.tenant.Spec.TenantName)
		return nil
	}), nil
}

// Finalize releases the backup's login: deleting the record leaves the
// backup set to OceanBase's delete policy.
func (c *TenantBackupController) Finalize(ctx *BackupContext) (bool, error) {
	c.logins.release(backupHolder(ctx.Obj))
	c.mu.Lock()
	delete(c.sent, ctx.Obj.UID)
	c.mu.Unlock()
	return true, nil
}
