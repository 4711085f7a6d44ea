package matrixone

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// The BackupSchedule controller's RBAC, on top of the BackupJob's.
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupschedules,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupschedules/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupjobs;backups;snapshots,verbs=create;delete

// scheduleResync is how often a schedule is looked at: a run is taken at
// most this late.
const scheduleResync = 15 * time.Second

// failedJobsKept is how many failed BackupJobs of a schedule are kept, the
// newest, for their status and their pods' logs.
const failedJobsKept = 3

// BackupSchedule is the kind the backup schedules' controller reconciles.
type BackupSchedule = mov1.BackupSchedule

// ScheduleContext is the framework's pass context of a BackupSchedule.
type ScheduleContext = framework.Context[*BackupSchedule]

// BackupScheduleController is the BackupSchedule actor: Declare reads the
// schedule's runs and records (its BackupJobs and Backups, or its
// Snapshots, which are both) into status; Observe takes a run when one is
// due (or skips it while one has not finished: concurrency is forbidden),
// then deletes the records retention does not keep, then the runs no
// longer needed. Each decision reads what the API server
// holds, so it resumes after an operator restart without a flow: the due
// time is status.lastScheduleTime's successor, and a run's job has a name
// made from its due time, so a run is never taken twice.
type BackupScheduleController struct {
	opts Options
}

// NewBackupScheduleController returns a BackupSchedule controller.
func NewBackupScheduleController(opts Options) *BackupScheduleController {
	return &BackupScheduleController{opts: opts.withDefaults()}
}

func setupBackupSchedules(mgr ctrl.Manager, c *BackupScheduleController) error {
	resync := min(c.opts.Resync, scheduleResync)
	_, err := framework.Setup(mgr, framework.Options[*BackupSchedule, *scheduleState]{
		Actor: c, App: build.App, PartOf: build.PartOf,
		Owns:   []client.Object{&mov1.BackupJob{}},
		Resync: resync, ResyncNotReady: resync,
	})
	return err
}

// Default applies the API's defaults (mov1.DefaultBackupSchedule).
func (*BackupScheduleController) Default(s *BackupSchedule) { mov1.DefaultBackupSchedule(s) }

// Validate checks the schedule parses, the destination as a BackupJob's,
// and the retention's maxAge is positive.
func (*BackupScheduleController) Validate(s *BackupSchedule) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if _, err := framework.ParseSchedule(s.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(spec.Child("schedule"), s.Spec.Schedule, err.Error()))
	}
	switch {
	case (s.Spec.Destination == nil) == (s.Spec.Snapshot == nil):
		errs = append(errs, field.Invalid(spec, "", "set exactly one of destination (physical backups) and snapshot (account snapshots)"))
	case s.Spec.Destination != nil:
		errs = append(errs, validateBackupDestination(spec.Child("destination"), *s.Spec.Destination)...)
		errs = append(errs, validateBackupTimeout(spec.Child("timeout"), s.Spec.Timeout)...)
	}
	if a := s.Spec.Retention.MaxAge; a != nil && a.Duration <= 0 {
		errs = append(errs, field.Invalid(spec.Child("retention", "maxAge"), a.Duration.String(), "must be more than 0"))
	}
	return errs.ToAggregate()
}

// scheduleState is what a pass observed of a schedule.
type scheduleState struct {
	// due is the latest run time that has come and was not taken, zero
	// when none.
	due time.Time
	// runKind and recordKind name the kinds of the schedule's runs and
	// records, for Events: BackupJob and Backup, or Snapshot twice.
	runKind, recordKind string
	// active is the schedule's unfinished run, nil when none.
	active client.Object
	// runs and records are the schedule's, newest first.
	runs    []scheduleRun
	records []scheduleRecord
}

// scheduleRun is a run of a schedule: a BackupJob, or a Snapshot.
type scheduleRun struct {
	obj client.Object
	// finished: the run ended, recorded or not (failed, aborted).
	finished bool
	// record names what it recorded (its Backup, or the Snapshot
	// itself); empty when nothing.
	record string
}

// scheduleRecord is what a run left: a Backup, or a taken Snapshot.
type scheduleRecord struct {
	obj client.Object
	// complete is what the record was last read as (a Backup's
	// consistent point known, a Snapshot taken), not whether the store
	// answers now: a store out of reach for a while must not let
	// retention take the newest complete one.
	complete bool
}

// newestFirst orders objects by creation, newest first, then by name.
func newestFirst(a, b client.Object) int {
	return cmp.Or(b.GetCreationTimestamp().Compare(a.GetCreationTimestamp().Time), strings.Compare(b.GetName(), a.GetName()))
}

// listRuns reads the schedule's runs and records into st.
func (c *BackupScheduleController) listRuns(ctx *ScheduleContext, st *scheduleState) error {
	s := ctx.Obj
	mine := []client.ListOption{client.InNamespace(s.Namespace), client.MatchingLabels{build.LabelBackupSchedule: s.Name}}
	if s.Spec.Snapshot != nil {
		st.runKind, st.recordKind = "Snapshot", "Snapshot"
		var snapshots mov1.SnapshotList
		if err := ctx.Client.List(ctx, &snapshots, mine...); err != nil {
			return fmt.Errorf("list the schedule's Snapshots: %w", err)
		}
		for i := range snapshots.Items {
			sn := &snapshots.Items[i]
			run := scheduleRun{obj: sn, finished: snapshotFinished(sn)}
			if sn.Status.SnapshotName != "" {
				run.record = sn.Name
				st.records = append(st.records, scheduleRecord{obj: sn, complete: true})
			}
			st.runs = append(st.runs, run)
		}
	} else {
		st.runKind, st.recordKind = "BackupJob", "Backup"
		var jobs mov1.BackupJobList
		if err := ctx.Client.List(ctx, &jobs, mine...); err != nil {
			return fmt.Errorf("list the schedule's BackupJobs: %w", err)
		}
		for i := range jobs.Items {
			j := &jobs.Items[i]
			st.runs = append(st.runs, scheduleRun{obj: j, finished: finished(j), record: j.Status.Backup})
		}
		var backups mov1.BackupList
		if err := ctx.Client.List(ctx, &backups, mine...); err != nil {
			return fmt.Errorf("list the schedule's Backups: %w", err)
		}
		for i := range backups.Items {
			b := &backups.Items[i]
			st.records = append(st.records, scheduleRecord{obj: b, complete: b.Status.BackupTS != ""})
		}
	}
	slices.SortFunc(st.runs, func(a, b scheduleRun) int { return newestFirst(a.obj, b.obj) })
	slices.SortFunc(st.records, func(a, b scheduleRecord) int { return newestFirst(a.obj, b.obj) })
	for _, r := range st.runs {
		if !r.finished && r.obj.GetDeletionTimestamp().IsZero() {
			st.active = r.obj
		}
	}
	return nil
}

// Declare reads the schedule's runs and records, decides when the next run
// is due, and writes status and Ready.
func (c *BackupScheduleController) Declare(ctx *ScheduleContext) (*scheduleState, error) {
	s := ctx.Obj
	sched, err := framework.ParseSchedule(s.Spec.Schedule)
	if err != nil {
		return nil, framework.InvalidSpec(fmt.Errorf("spec.schedule: %w", err))
	}
	st := &scheduleState{}
	if err := c.listRuns(ctx, st); err != nil {
		return nil, err
	}
	status := &s.Status
	status.Active, status.LastBackup, status.Backups = "", "", int32(len(st.records))
	if st.active != nil {
		status.Active = st.active.GetName()
	}
	for _, r := range st.records {
		if r.complete {
			status.LastBackup = r.obj.GetName()
			break
		}
	}
	from := s.CreationTimestamp.Time
	if t := status.LastScheduleTime; t != nil {
		from = t.Time
	}
	var next time.Time
	st.due, next = framework.DueRun(sched, from, time.Now())
	kept := fmt.Sprintf("%d %ss kept", len(st.records), strings.ToLower(st.recordKind))
	status.NextScheduleTime = nil
	if s.Spec.Suspend {
		st.due = time.Time{}
		ctx.SetReady(true, "", "suspended; "+kept)
		return st, nil
	}
	status.NextScheduleTime = &metav1.Time{Time: next}
	ctx.SetReady(true, "", fmt.Sprintf("%s; the next run is due at %s", kept, next.UTC().Format(time.RFC3339)))
	return st, nil
}

// Observe takes or skips a due run, then applies the retention.
func (c *BackupScheduleController) Observe(ctx *ScheduleContext, st *scheduleState) (framework.Action[*BackupSchedule], error) {
	if !st.due.IsZero() {
		return framework.Named("TakeBackup", func(ctx *ScheduleContext) error { return c.run(ctx, st) }), nil
	}
	if expired := c.expired(ctx.Obj, st); len(expired) > 0 {
		return framework.Named("ExpireBackups", func(ctx *ScheduleContext) error { return c.expire(ctx, st, expired) }), nil
	}
	if stale := staleJobs(st); len(stale) > 0 {
		return framework.Named("DeleteStaleJobs", func(ctx *ScheduleContext) error { return deleteAll(ctx, stale) }), nil
	}
	return nil, nil
}

// run takes the due run: a BackupJob (or Snapshot) named after the
// schedule and the due time, or, while a run of the schedule has not
// finished, nothing but an Event. Either way the run is recorded as taken.
func (c *BackupScheduleController) run(ctx *ScheduleContext, st *scheduleState) error {
	s := ctx.Obj
	due := metav1.NewTime(st.due)
	run := scheduledRun(s, st.due)
	switch {
	case st.active != nil && st.active.GetName() == run.GetName():
		// Created by a pass whose status write was lost.
		s.Status.LastScheduleTime = &due
		return nil
	case st.active != nil:
		ctx.Event(corev1.EventTypeWarning, mov1.EventBackupSkipped, "Skipped the run due at %s: the %s %s has not finished",
			st.due.UTC().Format(time.RFC3339), st.runKind, st.active.GetName())
		s.Status.LastScheduleTime = &due
		return nil
	}
	// A BackupJob goes with its schedule; a Snapshot is also the record,
	// which stays, as Backups do.
	if _, job := run.(*BackupJob); job {
		if err := controllerutil.SetControllerReference(s, run, ctx.Scheme); err != nil {
			return err
		}
	}
	switch err := ctx.Client.Create(ctx, run); {
	case apierrors.IsAlreadyExists(err):
		s.Status.LastScheduleTime = &due
		return nil
	case err != nil:
		return fmt.Errorf("create the %s %s: %w", st.runKind, run.GetName(), err)
	}
	s.Status.LastScheduleTime = &due
	ctx.Log.Info("Took a scheduled run", strings.ToLower(st.runKind), run.GetName(), "due", st.due)
	ctx.Event(corev1.EventTypeNormal, mov1.EventBackupScheduled, "Created the %s %s for the run due at %s",
		st.runKind, run.GetName(), st.due.UTC().Format(time.RFC3339))
	return nil
}

// scheduledRun is the BackupJob (or Snapshot) of s's run due at due: its
// name is the schedule's and the due time's (Unix seconds: "@every 30s"
// is a schedule too), so a run is created once.
func scheduledRun(s *BackupSchedule, due time.Time) client.Object {
	meta := metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name + "-" + strconv.FormatInt(due.Unix(), 10),
		Labels: map[string]string{build.LabelBackupSchedule: s.Name}}
	if s.Spec.Snapshot != nil {
		return &Snapshot{ObjectMeta: meta, Spec: mov1.SnapshotSpec{Cluster: s.Spec.Cluster, Account: s.Spec.Snapshot.Account}}
	}
	return &BackupJob{ObjectMeta: meta,
		Spec: mov1.BackupJobSpec{Cluster: s.Spec.Cluster, Destination: *s.Spec.Destination.DeepCopy(), Timeout: s.Spec.Timeout,
			DeletionPolicy: commonv1.ReclaimDelete}}
}

// expired returns the schedule's records that retention does not keep:
// those past count (newest first) and those older than maxAge, never the
// newest complete one, nor one being deleted.
func (c *BackupScheduleController) expired(s *BackupSchedule, st *scheduleState) []client.Object {
	r := s.Spec.Retention
	var out []client.Object
	kept := 0
	for _, rec := range st.records {
		b := rec.obj
		if !b.GetDeletionTimestamp().IsZero() {
			continue
		}
		old := r.MaxAge != nil && time.Since(b.GetCreationTimestamp().Time) > r.MaxAge.Duration
		over := r.Count != nil && kept >= int(*r.Count)
		if b.GetName() != s.Status.LastBackup && (old || over) {
			out = append(out, b)
			continue
		}
		kept++
	}
	return out
}

// expire deletes the records (a Backup's finalizer deletes its objects, a
// Snapshot's drops the snapshot).
func (c *BackupScheduleController) expire(ctx *ScheduleContext, st *scheduleState, expired []client.Object) error {
	for _, b := range expired {
		ctx.Event(corev1.EventTypeNormal, mov1.EventBackupExpired, "Deleting the %s %s: the retention does not keep it", st.recordKind, b.GetName())
	}
	return deleteAll(ctx, expired)
}

// staleJobs are the schedule's finished runs no longer needed: a recorded
// one whose record is gone, and failed ones beyond the newest
// failedJobsKept.
func staleJobs(st *scheduleState) []client.Object {
	records := map[string]bool{}
	for _, r := range st.records {
		records[r.obj.GetName()] = true
	}
	var out []client.Object
	failed := 0
	for _, r := range st.runs {
		switch {
		case !r.finished || !r.obj.GetDeletionTimestamp().IsZero():
		case r.record != "":
			if !records[r.record] {
				out = append(out, r.obj)
			}
		default:
			failed++
			if failed > failedJobsKept {
				out = append(out, r.obj)
			}
		}
	}
	return out
}

// deleteAll deletes objs, each only if it is still the object listed.
func deleteAll(ctx *ScheduleContext, objs []client.Object) error {
	for _, o := range objs {
		uid := o.GetUID()
		if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, o, client.Preconditions{UID: &uid})); err != nil {
			return fmt.Errorf("delete %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// Finalize lets the schedule go: its BackupJobs go with it (owner
// references), its Backups and Snapshots stay.
func (*BackupScheduleController) Finalize(*ScheduleContext) (bool, error) { return true, nil }
