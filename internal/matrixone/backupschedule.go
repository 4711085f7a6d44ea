package matrixone

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
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
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupjobs;backups,verbs=create;delete

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
// schedule's jobs and Backups into status; Observe takes a BackupJob when
// a run is due (or skips the run while one has not finished: concurrency
// is forbidden), then deletes the Backups retention does not keep, then
// the jobs that recorded them. Each decision reads what the API server
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

// cronParser reads five-field expressions and descriptors (@daily,
// @every 6h), as Kubernetes' CronJob does.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Validate checks the schedule parses, the destination as a BackupJob's,
// and the retention's maxAge is positive.
func (*BackupScheduleController) Validate(s *BackupSchedule) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if _, err := cronParser.Parse(s.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(spec.Child("schedule"), s.Spec.Schedule, err.Error()))
	}
	job := &mov1.BackupJob{Spec: mov1.BackupJobSpec{Cluster: s.Spec.Cluster, Destination: s.Spec.Destination, Timeout: s.Spec.Timeout}}
	if err := NewBackupJobController(Options{}).Validate(job); err != nil {
		errs = append(errs, field.Invalid(spec, "", err.Error()))
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
	// active is the schedule's unfinished job, nil when none.
	active *BackupJob
	// jobs and backups are the schedule's, newest first.
	jobs    []BackupJob
	backups []mov1.Backup
}

// Declare reads the schedule's jobs and Backups, decides when the next run
// is due, and writes status and Ready.
func (c *BackupScheduleController) Declare(ctx *ScheduleContext) (*scheduleState, error) {
	s := ctx.Obj
	sched, err := cronParser.Parse(s.Spec.Schedule)
	if err != nil {
		return nil, framework.InvalidSpec(fmt.Errorf("spec.schedule: %w", err))
	}
	st := &scheduleState{}
	mine := client.MatchingLabels{build.LabelBackupSchedule: s.Name}
	var jobs mov1.BackupJobList
	if err := ctx.Client.List(ctx, &jobs, client.InNamespace(s.Namespace), mine); err != nil {
		return nil, fmt.Errorf("list the schedule's BackupJobs: %w", err)
	}
	var backups mov1.BackupList
	if err := ctx.Client.List(ctx, &backups, client.InNamespace(s.Namespace), mine); err != nil {
		return nil, fmt.Errorf("list the schedule's Backups: %w", err)
	}
	newest := func(a, b metav1.ObjectMeta) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), strings.Compare(b.Name, a.Name))
	}
	st.jobs, st.backups = jobs.Items, backups.Items
	slices.SortFunc(st.jobs, func(a, b BackupJob) int { return newest(a.ObjectMeta, b.ObjectMeta) })
	slices.SortFunc(st.backups, func(a, b mov1.Backup) int { return newest(a.ObjectMeta, b.ObjectMeta) })
	for i := range st.jobs {
		if !finished(&st.jobs[i]) && st.jobs[i].DeletionTimestamp.IsZero() {
			st.active = &st.jobs[i]
		}
	}

	status := &s.Status
	status.Active, status.LastBackup, status.Backups = "", "", int32(len(st.backups))
	if st.active != nil {
		status.Active = st.active.Name
	}
	// Complete is what a Backup was last read as (its consistent point
	// known), not whether the store answers now: a store out of reach
	// for a while must not let retention take the newest complete backup.
	for i := range st.backups {
		if st.backups[i].Status.BackupTS != "" {
			status.LastBackup = st.backups[i].Name
			break
		}
	}
	from := s.CreationTimestamp.Time
	if t := status.LastScheduleTime; t != nil {
		from = t.Time
	}
	now := time.Now()
	next := sched.Next(from)
	// Runs missed while the operator was down: only the latest is taken.
	for !next.After(now) {
		st.due = next
		next = sched.Next(next)
	}
	status.NextScheduleTime = nil
	if s.Spec.Suspend {
		st.due = time.Time{}
		ctx.SetReady(true, "", fmt.Sprintf("suspended; %d backups kept", len(st.backups)))
		return st, nil
	}
	status.NextScheduleTime = &metav1.Time{Time: next}
	ctx.SetReady(true, "", fmt.Sprintf("%d backups kept; the next run is due at %s", len(st.backups), next.UTC().Format(time.RFC3339)))
	return st, nil
}

// Observe takes or skips a due run, then applies the retention.
func (c *BackupScheduleController) Observe(ctx *ScheduleContext, st *scheduleState) (framework.Action[*BackupSchedule], error) {
	if !st.due.IsZero() {
		return framework.Named("TakeBackup", func(ctx *ScheduleContext) error { return c.run(ctx, st) }), nil
	}
	if expired := c.expired(ctx.Obj, st); len(expired) > 0 {
		return framework.Named("ExpireBackups", func(ctx *ScheduleContext) error { return c.expire(ctx, expired) }), nil
	}
	if stale := staleJobs(st); len(stale) > 0 {
		return framework.Named("DeleteStaleJobs", func(ctx *ScheduleContext) error { return deleteAll(ctx, stale) }), nil
	}
	return nil, nil
}

// run takes the due run: a BackupJob named after the schedule and the due
// time, or, while a job of the schedule has not finished, nothing but an
// Event. Either way the run is recorded as taken.
func (c *BackupScheduleController) run(ctx *ScheduleContext, st *scheduleState) error {
	s := ctx.Obj
	due := metav1.NewTime(st.due)
	job := scheduledJob(s, st.due)
	switch {
	case st.active != nil && st.active.Name == job.Name:
		// Created by a pass whose status write was lost.
		s.Status.LastScheduleTime = &due
		return nil
	case st.active != nil:
		ctx.Event(corev1.EventTypeWarning, mov1.EventBackupSkipped, "Skipped the run due at %s: the BackupJob %s has not finished",
			st.due.UTC().Format(time.RFC3339), st.active.Name)
		s.Status.LastScheduleTime = &due
		return nil
	}
	if err := controllerutil.SetControllerReference(s, job, ctx.Scheme); err != nil {
		return err
	}
	switch err := ctx.Client.Create(ctx, job); {
	case apierrors.IsAlreadyExists(err):
		s.Status.LastScheduleTime = &due
		return nil
	case err != nil:
		return fmt.Errorf("create the BackupJob %s: %w", job.Name, err)
	}
	s.Status.LastScheduleTime = &due
	ctx.Log.Info("Took a scheduled backup", "backupjob", job.Name, "due", st.due)
	ctx.Event(corev1.EventTypeNormal, mov1.EventBackupScheduled, "Created the BackupJob %s for the run due at %s",
		job.Name, st.due.UTC().Format(time.RFC3339))
	return nil
}

// scheduledJob is the BackupJob of s's run due at due: its name is the
// schedule's and the due time's (Unix seconds: "@every 30s" is a
// schedule too), so a run is created once.
func scheduledJob(s *BackupSchedule, due time.Time) *BackupJob {
	return &BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name + "-" + strconv.FormatInt(due.Unix(), 10),
			Labels: map[string]string{build.LabelBackupSchedule: s.Name}},
		Spec: mov1.BackupJobSpec{Cluster: s.Spec.Cluster, Destination: *s.Spec.Destination.DeepCopy(), Timeout: s.Spec.Timeout,
			DeletionPolicy: commonv1.ReclaimDelete},
	}
}

// expired returns the schedule's Backups that retention does not keep:
// those past count (newest first) and those older than maxAge, never the
// newest complete one, nor one being deleted.
func (c *BackupScheduleController) expired(s *BackupSchedule, st *scheduleState) []client.Object {
	r := s.Spec.Retention
	var out []client.Object
	kept := 0
	for i := range st.backups {
		b := &st.backups[i]
		if !b.DeletionTimestamp.IsZero() {
			continue
		}
		old := r.MaxAge != nil && time.Since(b.CreationTimestamp.Time) > r.MaxAge.Duration
		over := r.Count != nil && kept >= int(*r.Count)
		if b.Name != s.Status.LastBackup && (old || over) {
			out = append(out, b)
			continue
		}
		kept++
	}
	return out
}

// expire deletes the Backups (their finalizer deletes their objects).
func (c *BackupScheduleController) expire(ctx *ScheduleContext, expired []client.Object) error {
	for _, b := range expired {
		ctx.Event(corev1.EventTypeNormal, mov1.EventBackupExpired, "Deleting the Backup %s: the retention does not keep it", b.GetName())
	}
	return deleteAll(ctx, expired)
}

// staleJobs are the schedule's finished jobs no longer needed: a recorded
// one whose Backup is gone, and failed ones beyond the newest
// failedJobsKept.
func staleJobs(st *scheduleState) []client.Object {
	backups := map[string]bool{}
	for _, b := range st.backups {
		backups[b.Name] = true
	}
	var out []client.Object
	failed := 0
	for i := range st.jobs {
		j := &st.jobs[i]
		switch {
		case !finished(j) || !j.DeletionTimestamp.IsZero():
		case j.Status.Backup != "":
			if !backups[j.Status.Backup] {
				out = append(out, j)
			}
		default:
			failed++
			if failed > failedJobsKept {
				out = append(out, j)
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

// Finalize lets the schedule go: its jobs go with it (owner references),
// its Backups stay.
func (*BackupScheduleController) Finalize(*ScheduleContext) (bool, error) { return true, nil }
