package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The backup policy controller's RBAC.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackuppolicies,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackuppolicies/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackuppolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantbackups,verbs=create;delete

// BackupPolicy is the kind the backup policy controller reconciles.
type BackupPolicy = obv1.OBTenantBackupPolicy

// PolicyContext is the framework's pass context of an OBTenantBackupPolicy.
type PolicyContext = framework.Context[*BackupPolicy]

// policyResync is how often a policy is looked at: its status follows the
// archive's checkpoint, and a scheduled backup is taken at most this late.
const policyResync = 15 * time.Second

// BackupPolicyController is the OBTenantBackupPolicy actor. Declare reads
// the tenant's archive, destinations and delete policy from OceanBase
// (from sys, as the cluster's operator user) and the policy's
// OBTenantBackups into status; Observe then brings OceanBase to the spec
// one statement a pass (the archive destination, moved by a flow while
// the tenant archives; the data destination; the delete policy; archiving
// on, deferred or resumed) and takes the scheduled backups, as
// OBTenantBackups the backup controller runs. Every decision reads
// OceanBase and the API server again, so a manager that restarts resumes
// where the last left off: a scheduled backup is named after its due
// time, and status.lastFullScheduleTime records it taken.
type BackupPolicyController struct {
	opts   Options
	logins *logins
}

// NewBackupPolicyController returns a backup policy controller.
func NewBackupPolicyController(opts Options) *BackupPolicyController {
	opts = opts.withDefaults()
	return &BackupPolicyController{opts: opts, logins: newLogins(opts)}
}

func setupBackupPolicies(mgr ctrl.Manager, opts Options) error {
	c := NewBackupPolicyController(opts)
	resync := min(c.opts.Resync, policyResync)
	_, err := framework.Setup(mgr, framework.Options[*BackupPolicy, *policyState]{
		Actor: c, App: build.BackupPolicyApp, PartOf: build.PartOf,
		Owns:   []client.Object{&obv1.OBTenantBackup{}},
		Flows:  []framework.Flow[*BackupPolicy, *policyState]{c.archiveDestFlow()},
		Resync: resync, ResyncNotReady: transitionPoll,
	})
	return err
}

// Default applies the API's defaults (obv1.DefaultBackupPolicy).
func (*BackupPolicyController) Default(p *BackupPolicy) { obv1.DefaultBackupPolicy(p) }

// Validate checks what the schema cannot: the schedules parse, and the
// archive and the backup sets go to different places.
func (*BackupPolicyController) Validate(p *BackupPolicy) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if _, err := framework.ParseSchedule(p.Spec.DataBackup.FullSchedule); err != nil {
		errs = append(errs, field.Invalid(spec.Child("dataBackup", "fullSchedule"), p.Spec.DataBackup.FullSchedule, err.Error()))
	}
	if s := p.Spec.DataBackup.IncrementalSchedule; s != "" {
		if _, err := framework.ParseSchedule(s); err != nil {
			errs = append(errs, field.Invalid(spec.Child("dataBackup", "incrementalSchedule"), s, err.Error()))
		}
	}
	archive, data := strings.TrimSuffix(p.Spec.Archive.Destination.Path, "/"), strings.TrimSuffix(p.Spec.DataBackup.Destination.Path, "/")
	if archive == data || strings.HasPrefix(archive, data+"/") || strings.HasPrefix(data, archive+"/") {
		errs = append(errs, field.Invalid(spec.Child("dataBackup", "destination", "path"), p.Spec.DataBackup.Destination.Path,
			"must not be, contain or be inside archive.destination.path: OceanBase keeps them apart"))
	}
	return errs.ToAggregate()
}

// Dependencies returns the policy's tenant, which must be NORMAL in
// OceanBase.
func (*BackupPolicyController) Dependencies(ctx *PolicyContext) ([]framework.Dependency, error) {
	return normalTenant(ctx.Obj.Spec.Tenant), nil
}

// normalTenant is the dependency of a backup or a policy on its OBTenant:
// the tenant NORMAL in OceanBase.
func normalTenant(name string) []framework.Dependency {
	return []framework.Dependency{{
		Object: &Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		Ready: func(o client.Object) (bool, string) {
			t := o.(*Tenant)
			if t.Status.TenantID == 0 || t.Status.TenantStatus != "NORMAL" {
				return false, "its tenant is not NORMAL in OceanBase"
			}
			return true, ""
		},
	}}
}

// policyState is what a pass read of a policy's tenant.
type policyState struct {
	db                   *sql.DB
	tenant               *Tenant
	logMode              string
	archiveDest          obsql.ArchiveDest
	round                *obsql.ArchiveRound
	dataDest, deletePlan string
	// archiveWant and dataWant are the destinations as OceanBase takes
	// them (with keys).
	archiveWant, dataWant string
	// runningJob: OceanBase runs a backup job of the tenant.
	runningJob bool
	// completedFull: the tenant has a completed full backup job.
	completedFull bool
	// backups are the policy's OBTenantBackups, newest first; active the
	// one not finished, nil when none.
	backups []obv1.OBTenantBackup
	active  *obv1.OBTenantBackup
	// dueFull and dueIncremental are the runs due, zero when none.
	dueFull, dueIncremental time.Time
}

// archiving reports whether the tenant's latest round archives (or is
// about to, or is suspended): its destination cannot change.
func (st *policyState) archiving() bool {
	return st.round != nil && st.round.Status != obv1.ArchiveStop
}

// archiveDestDiffers reports whether OceanBase's archive destination is
// not the spec's.
func (st *policyState) archiveDestDiffers(p *BackupPolicy) bool {
	a := p.Spec.Archive
	return !build.SameDestination(st.archiveDest.Path, a.Destination) ||
		!strings.EqualFold(st.archiveDest.PieceSwitchInterval, a.PieceSwitchInterval) ||
		!strings.EqualFold(st.archiveDest.Binding, a.Binding)
}

// Declare reads the tenant's archive and backups into status, decides
// which scheduled runs are due, and sets Ready.
func (c *BackupPolicyController) Declare(ctx *PolicyContext) (*policyState, error) {
	p := ctx.Obj
	archive, data, err := c.destinations(ctx)
	if err != nil {
		// The Secret can be fixed without a change to the spec: each
		// resync looks again.
		ctx.SetReady(false, obv1.ReasonCredentialsMissing, err.Error())
		return nil, nil
	}
	st, err := c.observe(ctx)
	if err != nil {
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil
	}
	st.archiveWant, st.dataWant = archive, data
	if err := c.readBackups(ctx, st); err != nil {
		return nil, err
	}
	c.writeStatus(p, st)
	if err := c.due(p, st); err != nil {
		return nil, err
	}
	c.setReady(ctx, st)
	return st, nil
}

func (c *BackupPolicyController) observe(ctx *PolicyContext) (*policyState, error) {
	p := ctx.Obj
	st := &policyState{}
	t, ob, db, err := tenantLogin(ctx, ctx.Client, ctx.Reader, c.logins, policyHolder(p), ctx.Dependencies[0])
	if err != nil {
		return nil, err
	}
	st.tenant = t
	id := t.Status.TenantID
	st.logMode, err = obsql.TenantLogMode(ctx, db, id)
	if err == nil {
		st.archiveDest, err = obsql.TenantArchiveDest(ctx, db, id)
	}
	if err == nil {
		st.round, err = obsql.LatestArchiveRound(ctx, db, id)
	}
	if err == nil {
		st.dataDest, err = obsql.TenantDataBackupDest(ctx, db, id)
	}
	if err == nil {
		st.deletePlan, err = obsql.TenantDeletePolicy(ctx, db, id)
	}
	var jobs []obsql.BackupJob
	if err == nil {
		jobs, err = obsql.BackupJobs(ctx, db, id)
	}
	if err != nil {
		c.logins.drop(ob.UID, db)
		return nil, err
	}
	for _, j := range jobs {
		st.runningJob = st.runningJob || !j.Finished()
		st.completedFull = st.completedFull || j.Type == "FULL" && j.Status == obv1.BackupJobCompleted
	}
	st.db = db
	return st, nil
}

// tenantLogin returns the OBTenant a backup or a policy depends on
// (defaulted: its tenantName, when no webhook wrote it), its cluster, and
// a login to the cluster as holder.
func tenantLogin(ctx context.Context, c client.Client, r client.Reader, l *logins, holder string, dep client.Object) (*Tenant, *Cluster, *sql.DB, error) {
	t := dep.(*Tenant).DeepCopy()
	obv1.DefaultTenant(t)
	ob := &Cluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Cluster}, ob); err != nil {
		return nil, nil, nil, fmt.Errorf("get the OBCluster %s: %w", t.Spec.Cluster, err)
	}
	db, err := operatorDB(ctx, framework.SecretReader(c, r), l, holder, ob)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, ob, db, nil
}

// policyHolder names the policy's passes as a user of its cluster's login.
func policyHolder(p *BackupPolicy) string { return holderOf("OBTenantBackupPolicy", p.UID) }

// destinations renders the archive's and the data backup's destinations.
func (c *BackupPolicyController) destinations(ctx *PolicyContext) (archive, data string, err error) {
	if archive, err = c.destination(ctx, ctx.Obj.Spec.Archive.Destination); err == nil {
		data, err = c.destination(ctx, ctx.Obj.Spec.DataBackup.Destination)
	}
	return archive, data, err
}

// destination renders d as OceanBase takes it, reading an S3
// destination's keys from its Secret.
func (c *BackupPolicyController) destination(ctx *PolicyContext, d obv1.BackupDestination) (string, error) {
	return renderDestination(ctx, ctx.Reader, ctx.Obj.Namespace, d)
}

// renderDestination renders d, of an object in namespace ns, as OceanBase
// takes it, reading an S3 destination's keys from its Secret.
func renderDestination(ctx context.Context, r client.Reader, ns string, d obv1.BackupDestination) (string, error) {
	if d.S3 == nil {
		return build.Destination(d, build.S3Keys{}), nil
	}
	s := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.S3.CredentialsSecret}, s)
	if err != nil {
		return "", fmt.Errorf("read the Secret %s of %s: %w", d.S3.CredentialsSecret, d.Path, err)
	}
	keys := build.S3Keys{ID: string(s.Data[build.S3AccessKeyIDKey]), Secret: string(s.Data[build.S3SecretAccessKeyKey])}
	if !build.ValidS3Keys(keys) {
		return "", fmt.Errorf("the Secret %s must hold %s and %s, with no '&', '?' or white space (OceanBase reads them from the destination's query)",
			d.S3.CredentialsSecret, build.S3AccessKeyIDKey, build.S3SecretAccessKeyKey)
	}
	return build.Destination(d, keys), nil
}

// readBackups lists the policy's OBTenantBackups, newest first.
func (c *BackupPolicyController) readBackups(ctx *PolicyContext, st *policyState) error {
	var list obv1.OBTenantBackupList
	if err := ctx.Client.List(ctx, &list, client.InNamespace(ctx.Obj.Namespace),
		client.MatchingLabels{build.LabelBackupPolicy: ctx.Obj.Name}); err != nil {
		return fmt.Errorf("list the policy's OBTenantBackups: %w", err)
	}
	st.backups = list.Items
	slices.SortFunc(st.backups, func(a, b obv1.OBTenantBackup) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
	for i := range st.backups {
		if !backupFinished(&st.backups[i]) && st.active == nil {
			st.active = &st.backups[i]
		}
	}
	return nil
}

// backupFinished reports whether a backup's job ended, whichever way, or
// the backup was canceled before OceanBase started one.
func backupFinished(b *obv1.OBTenantBackup) bool {
	switch b.Status.JobStatus {
	case obv1.BackupJobCompleted, obv1.BackupJobFailed, obv1.BackupJobCanceled:
		return true
	}
	return canceledBeforeStart(b)
}

// canceledBeforeStart reports whether a backup was canceled with no job:
// before its statement was sent, or so long after that OceanBase would
// list the job it started (a statement lost on its way started none).
func canceledBeforeStart(b *obv1.OBTenantBackup) bool {
	s := b.Status
	return b.Spec.Cancel && s.JobID == 0 && (s.RequestedAt == nil || time.Since(s.RequestedAt.Time) > resendAfter+jobClockSlack)
}

func (c *BackupPolicyController) writeStatus(p *BackupPolicy, st *policyState) {
	s := &p.Status
	s.LogMode, s.DataBackupDest, s.RecoveryWindow = st.logMode, obsql.DestPath(st.dataDest), st.deletePlan
	prev := s.Archive
	s.Archive = nil
	if r := st.round; r != nil {
		s.Archive = &obv1.ArchiveStatus{RoundID: r.RoundID, Status: r.Status, Path: obsql.DestPath(r.Path),
			StartSCN: r.StartSCN, CheckpointSCN: coarseCheckpoint(prev, r)}
		if s.Archive.CheckpointSCN > 0 {
			s.Archive.CheckpointTime = &metav1.Time{Time: scnTime(s.Archive.CheckpointSCN)}
		}
	}
	s.ActiveBackup, s.LastFullBackup, s.LastIncrementalBackup = "", "", ""
	if st.active != nil {
		s.ActiveBackup = st.active.Name
	}
	for _, b := range st.backups {
		if b.Status.JobStatus != obv1.BackupJobCompleted {
			continue
		}
		if b.Spec.Type == obv1.BackupIncremental && s.LastIncrementalBackup == "" {
			s.LastIncrementalBackup = b.Name
		}
		if b.Spec.Type != obv1.BackupIncremental && s.LastFullBackup == "" {
			s.LastFullBackup = b.Name
		}
	}
}

// checkpointRefresh is how far OceanBase's archive checkpoint moves on
// before status says so: the checkpoint advances every second, and a
// status written as often would make an idle policy write all the time.
// An older checkpoint stays true (every transaction committed up to it is
// archived); a stuck archive shows as one older than this.
const checkpointRefresh = 5 * time.Minute

// coarseCheckpoint is the checkpoint status shows of round r: the one it
// showed (prev), unless r is another round or status, or OceanBase's has
// moved checkpointRefresh past it.
func coarseCheckpoint(prev *obv1.ArchiveStatus, r *obsql.ArchiveRound) int64 {
	if prev == nil || prev.RoundID != r.RoundID || prev.Status != r.Status || prev.CheckpointSCN <= 0 ||
		r.CheckpointSCN < prev.CheckpointSCN || scnTime(r.CheckpointSCN).Sub(scnTime(prev.CheckpointSCN)) >= checkpointRefresh {
		return r.CheckpointSCN
	}
	return prev.CheckpointSCN
}

// scnTime is the time an SCN stands for: OceanBase's SCNs are nanoseconds
// since the epoch.
func scnTime(scn int64) time.Time { return time.Unix(0, scn).UTC() }

// due decides the schedules' due runs and their next times (none while
// suspended).
func (c *BackupPolicyController) due(p *BackupPolicy, st *policyState) error {
	s := &p.Status
	s.NextFullScheduleTime, s.NextIncrementalScheduleTime = nil, nil
	now := time.Now()
	schedule := func(spec string, last *metav1.Time) (due time.Time, next *metav1.Time, err error) {
		sched, err := framework.ParseSchedule(spec)
		if err != nil {
			return due, nil, framework.InvalidSpec(err)
		}
		from := p.CreationTimestamp.Time
		if last != nil {
			from = last.Time
		}
		due, n := framework.DueRun(sched, from, now)
		return due, &metav1.Time{Time: n}, nil
	}
	var err error
	st.dueFull, s.NextFullScheduleTime, err = schedule(p.Spec.DataBackup.FullSchedule, s.LastFullScheduleTime)
	if err != nil {
		return err
	}
	if spec := p.Spec.DataBackup.IncrementalSchedule; spec != "" {
		if st.dueIncremental, s.NextIncrementalScheduleTime, err = schedule(spec, s.LastIncrementalScheduleTime); err != nil {
			return err
		}
	}
	if p.Spec.Suspend {
		st.dueFull, st.dueIncremental = time.Time{}, time.Time{}
		s.NextFullScheduleTime, s.NextIncrementalScheduleTime = nil, nil
	}
	return nil
}

func (c *BackupPolicyController) setReady(ctx *PolicyContext, st *policyState) {
	p := ctx.Obj
	switch {
	case st.archiveDestDiffers(p):
		ctx.SetReady(false, obv1.ReasonDestinationChanging, fmt.Sprintf("the archive destination is %q, the spec's is %q",
			obsql.DestPath(st.archiveDest.Path), p.Spec.Archive.Destination.Path))
	case !build.SameDestination(st.dataDest, p.Spec.DataBackup.Destination):
		ctx.SetReady(false, obv1.ReasonDestinationChanging, fmt.Sprintf("the data backup destination is %q, the spec's is %q",
			obsql.DestPath(st.dataDest), p.Spec.DataBackup.Destination.Path))
	case st.deletePlan != p.Spec.RecoveryWindow:
		ctx.SetReady(false, obv1.ReasonDestinationChanging, fmt.Sprintf("the delete policy's recovery window is %q, the spec's is %q",
			st.deletePlan, p.Spec.RecoveryWindow))
	case p.Spec.Suspend && st.round != nil && st.round.Status == obv1.ArchiveSuspend:
		ctx.SetReady(true, obv1.ReasonArchiveSuspended, "suspended: archiving is deferred and no backup is scheduled")
	case p.Spec.Suspend:
		ctx.SetReady(false, obv1.ReasonArchiveSuspended, "suspending the archive")
	case st.round == nil || st.round.Status != obv1.ArchiveDoing:
		status := "none"
		if st.round != nil {
			status = st.round.Status
		}
		ctx.SetReady(false, obv1.ReasonArchiveNotRunning, fmt.Sprintf("the archive round is %s, not DOING", status))
	default:
		msg := fmt.Sprintf("archiving (round %d)", st.round.RoundID)
		if last := p.Status.LastFullBackup; last != "" {
			msg += "; the last full backup is " + last
		}
		if next := p.Status.NextFullScheduleTime; next != nil {
			msg += "; the next full backup is due at " + next.UTC().Format(time.RFC3339)
		}
		ctx.SetReady(true, "", msg)
	}
}

// Observe brings OceanBase to the spec, one statement a pass, then takes
// due backups and deletes the backups the policy no longer keeps.
func (c *BackupPolicyController) Observe(ctx *PolicyContext, st *policyState) (framework.Action[*BackupPolicy], error) {
	p := ctx.Obj
	if st == nil {
		return nil, nil
	}
	if action := c.alignOceanBase(p, st); action != nil {
		return action, nil
	}
	switch {
	case !st.dueFull.IsZero():
		return framework.Named("TakeFullBackup", func(ctx *PolicyContext) error { return c.takeBackup(ctx, st, obv1.BackupFull) }), nil
	case !st.dueIncremental.IsZero():
		return framework.Named("TakeIncrementalBackup", func(ctx *PolicyContext) error { return c.takeBackup(ctx, st, obv1.BackupIncremental) }), nil
	}
	if old := backupsNotKept(p, st.backups); len(old) > 0 {
		return framework.Named("DeleteOldBackups", func(ctx *PolicyContext) error {
			for _, b := range old {
				err := ctx.Client.Delete(ctx, b)
				if client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("delete the OBTenantBackup %s: %w", b.Name, err)
				}
			}
			return nil
		}), nil
	}
	return nil, nil
}

// alignOceanBase returns the statement that brings the tenant's archive,
// destinations and delete policy one step closer to the spec, nil when
// they are as it says.
func (c *BackupPolicyController) alignOceanBase(p *BackupPolicy, st *policyState) framework.Action[*BackupPolicy] {
	tenant := st.tenant.Spec.TenantName
	switch {
	case st.archiveDestDiffers(p) && st.archiving():
		return framework.StartFlow[*BackupPolicy](flowArchiveDest, "archive destination "+p.Spec.Archive.Destination.Path)
	case st.archiveDestDiffers(p):
		return framework.Named("SetArchiveDest", func(ctx *PolicyContext) error { return c.setArchiveDest(ctx, st) })
	case !build.SameDestination(st.dataDest, p.Spec.DataBackup.Destination) && !st.runningJob:
		return framework.Named("SetDataBackupDest", func(ctx *PolicyContext) error {
			if err := obsql.SetDataBackupDest(ctx, st.db, tenant, st.dataWant); err != nil {
				return err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventDestinationSet, "Set the data backup destination of %s to %s", tenant, p.Spec.DataBackup.Destination.Path)
			return nil
		})
	case st.deletePlan != p.Spec.RecoveryWindow:
		return framework.Named("SetDeletePolicy", func(ctx *PolicyContext) error {
			if err := obsql.SetDeletePolicy(ctx, st.db, tenant, st.deletePlan, p.Spec.RecoveryWindow); err != nil {
				return err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventDeletePolicySet, "Set the delete policy of %s: recovery window %s", tenant, p.Spec.RecoveryWindow)
			return nil
		})
	case p.Spec.Suspend && st.round != nil && (st.round.Status == obv1.ArchiveDoing || st.round.Status == obv1.ArchiveBeginning):
		return framework.Named("SuspendArchive", func(ctx *PolicyContext) error {
			if err := obsql.SetArchiveDestState(ctx, st.db, tenant, "DEFER"); err != nil {
				return err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventArchiveSuspended, "Deferred the archive of %s (suspended)", tenant)
			return nil
		})
	case !p.Spec.Suspend && (st.round != nil && st.round.Status == obv1.ArchiveSuspend || strings.EqualFold(st.archiveDest.State, "DEFER")):
		return framework.Named("ResumeArchive", func(ctx *PolicyContext) error {
			if err := obsql.SetArchiveDestState(ctx, st.db, tenant, "ENABLE"); err != nil {
				return err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventArchiveStarted, "Resumed the archive of %s", tenant)
			return nil
		})
	case !p.Spec.Suspend && !st.archiving():
		return framework.Named("StartArchive", func(ctx *PolicyContext) error { return c.startArchive(ctx, st) })
	}
	return nil
}

// setArchiveDest sets the archive destination of a tenant that does not
// archive.
func (c *BackupPolicyController) setArchiveDest(ctx *PolicyContext, st *policyState) error {
	a := ctx.Obj.Spec.Archive
	if err := obsql.SetArchiveDest(ctx, st.db, st.tenant.Spec.TenantName, st.archiveWant, a.PieceSwitchInterval, a.Binding); err != nil {
		return err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventDestinationSet, "Set the archive destination of %s to %s", st.tenant.Spec.TenantName, a.Destination.Path)
	return nil
}

// startArchive starts archiving (ARCHIVELOG).
func (c *BackupPolicyController) startArchive(ctx *PolicyContext, st *policyState) error {
	if err := obsql.ArchiveLog(ctx, st.db, st.tenant.Spec.TenantName, true); err != nil {
		return err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventArchiveStarted, "Started archiving the log of %s to %s",
		st.tenant.Spec.TenantName, ctx.Obj.Spec.Archive.Destination.Path)
	return nil
}

// takeBackup takes the due run of typ: an OBTenantBackup named after the
// policy, the type and the due time; or, while a backup of the policy
// runs (or, for an incremental one, before a full one completed), nothing
// but a Warning Event. Either way the run is recorded as taken.
func (c *BackupPolicyController) takeBackup(ctx *PolicyContext, st *policyState, typ string) error {
	p := ctx.Obj
	due, last := st.dueFull, &p.Status.LastFullScheduleTime
	if typ == obv1.BackupIncremental {
		due, last = st.dueIncremental, &p.Status.LastIncrementalScheduleTime
	}
	b := build.ScheduledBackup(p, typ, due)
	taken := metav1.NewTime(due)
	switch {
	case st.active != nil && st.active.Name == b.Name:
		// Created by a pass whose status write was lost.
	case st.active != nil:
		ctx.Event(corev1.EventTypeWarning, obv1.EventBackupSkipped, "Skipped the %s backup due at %s: the OBTenantBackup %s has not finished",
			strings.ToLower(typ), due.UTC().Format(time.RFC3339), st.active.Name)
	case typ == obv1.BackupIncremental && !st.completedFull:
		ctx.Event(corev1.EventTypeWarning, obv1.EventBackupSkipped, "Skipped the incremental backup due at %s: the tenant has no completed full backup yet",
			due.UTC().Format(time.RFC3339))
	default:
		if err := controllerutil.SetControllerReference(p, b, ctx.Scheme); err != nil {
			return err
		}
		switch err := ctx.Client.Create(ctx, b); {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			return fmt.Errorf("create the OBTenantBackup %s: %w", b.Name, err)
		default:
			ctx.Log.Info("Took a scheduled backup", "backup", b.Name, "due", due)
			ctx.Event(corev1.EventTypeNormal, obv1.EventBackupScheduled, "Created the OBTenantBackup %s for the %s backup due at %s",
				b.Name, strings.ToLower(typ), due.UTC().Format(time.RFC3339))
		}
	}
	*last = &taken
	return nil
}

// backupsNotKept are the policy's finished backups beyond the newest
// spec.backupsKept.
func backupsNotKept(p *BackupPolicy, backups []obv1.OBTenantBackup) []*obv1.OBTenantBackup {
	var out []*obv1.OBTenantBackup
	kept := 0
	for i := range backups {
		b := &backups[i]
		if !backupFinished(b) || b.DeletionTimestamp != nil {
			continue
		}
		kept++
		if kept > int(p.Spec.BackupsKept) {
			out = append(out, b)
		}
	}
	return out
}

// Finalize stops archiving (NOARCHIVELOG), as the tenant was before the
// policy; its backup sets and archive stay where they are, for restores,
// and OceanBase's delete policy stays too. A tenant or cluster already
// gone has nothing to stop.
func (c *BackupPolicyController) Finalize(ctx *PolicyContext) (bool, error) {
	p := ctx.Obj
	t := &Tenant{}
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Tenant}, t)
	if apierrors.IsNotFound(err) || err == nil && (t.DeletionTimestamp != nil || t.Status.TenantID == 0) {
		c.logins.release(policyHolder(p))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	obv1.DefaultTenant(t)
	ob := &Cluster{}
	err = ctx.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: t.Spec.Cluster}, ob)
	if apierrors.IsNotFound(err) || err == nil && ob.DeletionTimestamp != nil {
		c.logins.release(policyHolder(p))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	db, err := operatorDB(ctx, framework.SecretReader(ctx.Client, ctx.Reader), c.logins, policyHolder(p), ob)
	if err != nil {
		return false, err
	}
	round, err := obsql.LatestArchiveRound(ctx, db, t.Status.TenantID)
	if err != nil {
		return false, err
	}
	if round != nil && round.Status != obv1.ArchiveStop {
		mode, err := obsql.TenantLogMode(ctx, db, t.Status.TenantID)
		if err != nil {
			return false, err
		}
		if mode == "ARCHIVELOG" {
			if err := obsql.ArchiveLog(ctx, db, t.Spec.TenantName, false); err != nil {
				return false, err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventArchiveStopped, "Stopped archiving the log of %s: its backup policy is deleted", t.Spec.TenantName)
		}
	}
	c.logins.release(policyHolder(p))
	return true, nil
}
