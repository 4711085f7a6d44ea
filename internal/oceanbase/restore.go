package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The restore controller's RBAC; the tenant controller creates the
// restores.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantrestores,verbs=get;list;watch;create;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantrestores/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantrestores/finalizers,verbs=update

// TenantRestore is the kind the restore controller reconciles.
type TenantRestore = obv1.OBTenantRestore

// RestoreContext is the framework's pass context of an OBTenantRestore.
type RestoreContext = framework.Context[*TenantRestore]

// TenantRestoreController is the OBTenantRestore actor. It sends ALTER
// SYSTEM RESTORE once, into the tenant its OBTenant names, with that
// tenant's pools (the OBTenant's create flow made them), and follows the
// job OceanBase starts; then, for the role Primary, activates the restored
// tenant. Its job is the newest restore job of the tenant's name that
// OceanBase started after the object was created (less the clocks'
// slack), so a manager that restarts after sending finds it instead of
// restoring twice (OceanBase would refuse: the tenant exists). A tenant
// that exists without such a job is not this restore's: it is never
// restored over, and the restore says so and does nothing.
type TenantRestoreController struct {
	opts   Options
	logins *logins
}

// NewTenantRestoreController returns a restore controller.
func NewTenantRestoreController(opts Options) *TenantRestoreController {
	opts = opts.withDefaults()
	return &TenantRestoreController{opts: opts, logins: newLogins(opts)}
}

func setupTenantRestores(mgr ctrl.Manager, opts Options) error {
	c := NewTenantRestoreController(opts)
	_, err := framework.Setup(mgr, framework.Options[*TenantRestore, *restoreState]{
		Actor: c, App: build.RestoreApp, PartOf: build.PartOf,
		Resync: c.opts.Resync, ResyncNotReady: transitionPoll,
	})
	return err
}

// Default applies the API's defaults.
func (*TenantRestoreController) Default(r *TenantRestore) { obv1.DefaultRestoreSource(&r.Spec.Source) }

// Dependencies returns the restore's OBTenant; a finished restore depends
// on nothing: it is a record.
func (*TenantRestoreController) Dependencies(ctx *RestoreContext) ([]framework.Dependency, error) {
	if restoreFinished(ctx.Obj) {
		return nil, nil
	}
	return []framework.Dependency{{
		Object: &Tenant{ObjectMeta: metav1.ObjectMeta{Name: ctx.Obj.Spec.Tenant}},
		Ready:  func(client.Object) (bool, string) { return true, "" },
	}}, nil
}

// restoreState is what a pass read of a restore's tenant.
type restoreState struct {
	db     *sql.DB
	tenant *Tenant
	// found is the tenant in OceanBase, nil when it has none.
	found *obsql.Tenant
	// job is the restore's job, nil before OceanBase lists it.
	job *obsql.RestoreJob
	// source is the restored standby's LOG_RESTORE_SOURCE, read once
	// the job succeeded when the spec asks it to replay the archive; nil
	// when it has none.
	source *obsql.LogRestoreSource
}

// restoreFinished reports whether the restore ended: its job failed, or
// it succeeded and the tenant has the role the spec asks for.
func restoreFinished(r *TenantRestore) bool {
	s := r.Status
	return s.JobStatus == obv1.RestoreFailed || restoreSucceeded(r)
}

// restoreSucceeded reports whether the tenant is restored, and activated
// when its role is Primary, or replaying the archive when the spec asks.
func restoreSucceeded(r *TenantRestore) bool {
	s := r.Status
	if s.JobStatus != obv1.RestoreSucceeded || r.Spec.Source.ReplayArchive && !s.ReplayingArchive {
		return false
	}
	want := obv1.TenantRoleStandby
	if r.Spec.Source.Role != obv1.RestoreAsStandby {
		want = obv1.TenantRolePrimary
	}
	return s.TenantRole == want
}

// Declare reads the restore's job and its tenant's role into status, and
// sets Ready. A finished restore reads nothing.
func (c *TenantRestoreController) Declare(ctx *RestoreContext) (*restoreState, error) {
	r := ctx.Obj
	if restoreFinished(r) {
		setRestoreReady(ctx)
		return nil, nil
	}
	st, err := c.observe(ctx)
	if err != nil {
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil
	}
	s := &r.Status
	if st.found != nil {
		s.TenantRole = st.found.Role
	}
	s.ReplayingArchive = replaysArchive(r, st.source)
	if j := st.job; j != nil {
		before := s.JobStatus
		s.JobID, s.JobStatus, s.BackupSets, s.BackupTenant = j.JobID, j.Status, j.BackupSets, j.BackupTenant
		s.StartedAt, s.FinishedAt, s.Result = &metav1.Time{Time: j.Start}, nil, ""
		if j.RestoreSCN > 0 {
			s.RestoreSCN, s.RestoreTime = j.RestoreSCN, &metav1.Time{Time: scnTime(j.RestoreSCN)}
		}
		if j.End != nil {
			s.FinishedAt = &metav1.Time{Time: *j.End}
		}
		if j.Status == obv1.RestoreFailed {
			s.Result = j.Comment
		}
		if j.Ended && before != j.Status {
			c.recordEnd(ctx, j)
		}
	}
	switch {
	case restoreFinished(r):
		setRestoreReady(ctx)
	case st.job == nil && st.found != nil:
		ctx.SetReady(false, obv1.ReasonTenantExists, fmt.Sprintf("OceanBase already has a tenant %s that this restore did not make: a restore never overwrites a tenant",
			st.tenant.Spec.TenantName))
	case st.job == nil:
		ctx.SetReady(false, obv1.ReasonRestoring, "starting the restore")
	case !st.job.Ended:
		ctx.SetReady(false, obv1.ReasonRestoring, fmt.Sprintf("OceanBase's restore job %d is at %s", st.job.JobID, st.job.Status))
	case r.Spec.Source.ReplayArchive && s.TenantRole == obv1.TenantRoleStandby:
		ctx.SetReady(false, obv1.ReasonRestoring, "pointing the restored standby at the archive")
	default:
		ctx.SetReady(false, obv1.ReasonRestoring, fmt.Sprintf("activating the restored tenant (role %s)", s.TenantRole))
	}
	return st, nil
}

// recordEnd records the Event of a job that ended in this pass.
func (c *TenantRestoreController) recordEnd(ctx *RestoreContext, j *obsql.RestoreJob) {
	if j.Status == obv1.RestoreSucceeded {
		ctx.Log.Info("Restore completed", "job", j.JobID, "restoreSCN", j.RestoreSCN)
		ctx.Event(corev1.EventTypeNormal, obv1.EventRestoreCompleted, "OceanBase's restore job %d restored the tenant to SCN %d (%s)",
			j.JobID, j.RestoreSCN, scnTime(j.RestoreSCN).Format("2006-01-02T15:04:05.000000Z07:00"))
		return
	}
	ctx.Event(corev1.EventTypeWarning, obv1.EventRestoreFailed, "OceanBase's restore job %d failed: %s", j.JobID, j.Comment)
}

// setRestoreReady sets Ready of a finished restore from its status.
func setRestoreReady(ctx *RestoreContext) {
	r := ctx.Obj
	s := &r.Status
	if restoreSucceeded(r) {
		ctx.SetReady(true, "", fmt.Sprintf("restored to SCN %d by job %d; the tenant is %s", s.RestoreSCN, s.JobID, s.TenantRole))
		return
	}
	ctx.SetReady(false, obv1.ReasonRestoreFailed, fmt.Sprintf("OceanBase's restore job %d failed: %s", s.JobID, s.Result))
}

func (c *TenantRestoreController) observe(ctx *RestoreContext) (*restoreState, error) {
	t, ob, db, err := tenantLogin(ctx, ctx.Client, ctx.Reader, c.logins, restoreHolder(ctx.Obj), ctx.Dependencies[0])
	if err != nil {
		return nil, err
	}
	st := &restoreState{tenant: t}
	name := t.Spec.TenantName
	var jobs []obsql.RestoreJob
	st.found, err = obsql.TenantByName(ctx, db, name)
	if err == nil {
		jobs, err = obsql.RestoreJobs(ctx, db, name)
	}
	if err != nil {
		c.logins.drop(ob.UID, db)
		return nil, err
	}
	st.db = db
	st.job = ownRestoreJob(ctx.Obj, jobs)
	if ctx.Obj.Spec.Source.ReplayArchive && st.job != nil && st.job.Status == obv1.RestoreSucceeded && st.found != nil {
		if st.source, err = obsql.TenantLogRestoreSource(ctx, db, st.found.ID); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// replaysArchive reports whether the standby's source is the spec's
// archive, with recovery UNLIMITED.
func replaysArchive(r *TenantRestore, source *obsql.LogRestoreSource) bool {
	return source != nil && source.RecoveryUntilSCN >= unlimitedSCN && archiveLocation(source.Value) == obsql.DestPath(r.Spec.Source.Archive.Path)
}

// archiveLocation is the destination of a LOG_RESTORE_SOURCE
// 'LOCATION=<dest>', without its keys; "" for another source.
func archiveLocation(value string) string {
	k, v, _ := strings.Cut(strings.TrimSpace(value), "=")
	if !strings.EqualFold(k, "LOCATION") {
		return ""
	}
	return obsql.DestPath(v)
}

// ownRestoreJob is the restore's job among jobs: the one of status.jobID,
// or the newest started since the object was created (less
// jobClockSlack).
func ownRestoreJob(r *TenantRestore, jobs []obsql.RestoreJob) *obsql.RestoreJob {
	var best *obsql.RestoreJob
	for i := range jobs {
		j := &jobs[i]
		switch {
		case r.Status.JobID != 0:
			if j.JobID == r.Status.JobID {
				return j
			}
		case j.Start.Before(r.CreationTimestamp.Add(-jobClockSlack)):
		case best == nil || j.JobID > best.JobID:
			best = j
		}
	}
	return best
}

// restoreHolder names the restore's passes as a user of its cluster's
// login.
func restoreHolder(r *TenantRestore) string { return holderOf("OBTenantRestore", r.UID) }

// Observe starts the restore when OceanBase has neither the tenant nor a
// job of this restore, and activates the restored tenant when its role is
// Primary.
func (c *TenantRestoreController) Observe(ctx *RestoreContext, st *restoreState) (framework.Action[*TenantRestore], error) {
	r := ctx.Obj
	switch {
	case st == nil:
		return nil, nil
	case st.job == nil && st.found == nil:
		return framework.Named("StartRestore", func(ctx *RestoreContext) error { return c.startRestore(ctx, st) }), nil
	case st.job != nil && st.job.Status == obv1.RestoreSucceeded && st.found != nil &&
		st.found.Role == obv1.TenantRoleStandby && r.Spec.Source.Role != obv1.RestoreAsStandby:
		return framework.Named("ActivateTenant", func(ctx *RestoreContext) error {
			ctx.Log.Info("Activating the restored tenant", "tenant", st.found.Name)
			if err := obsql.ActivateStandby(ctx, st.db, st.found.Name); err != nil {
				return err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventTenantActivated, "Activated the restored tenant %s: it is PRIMARY", st.found.Name)
			return nil
		}), nil
	case st.job != nil && st.job.Status == obv1.RestoreSucceeded && st.found != nil &&
		st.found.Role == obv1.TenantRoleStandby && r.Spec.Source.ReplayArchive && !replaysArchive(r, st.source):
		return framework.Named("ReplayArchive", func(ctx *RestoreContext) error { return c.replayArchive(ctx, st) }), nil
	}
	return nil, nil
}

// replayArchive sets the restored standby's LOG_RESTORE_SOURCE to the
// archive, unless OceanBase holds it, then its recovery to UNLIMITED.
func (c *TenantRestoreController) replayArchive(ctx *RestoreContext, st *restoreState) error {
	r, name := ctx.Obj, st.found.Name
	if st.source == nil || archiveLocation(st.source.Value) != obsql.DestPath(r.Spec.Source.Archive.Path) {
		archive, err := renderDestination(ctx, ctx.Reader, r.Namespace, r.Spec.Source.Archive)
		if err != nil {
			return err
		}
		ctx.Log.Info("Pointing the restored standby at the archive", "tenant", name, "archive", obsql.DestPath(archive))
		if err := obsql.SetLogRestoreSource(ctx, st.db, name, "LOCATION="+archive); err != nil {
			return err
		}
	}
	if err := obsql.RecoverStandby(ctx, st.db, name, 0); err != nil {
		return err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventReplayingArchive, "The restored standby %s replays the archive %s", name, obsql.DestPath(r.Spec.Source.Archive.Path))
	return nil
}

// startRestore sends ALTER SYSTEM RESTORE with the tenant's pools, primary
// zone and locality.
func (c *TenantRestoreController) startRestore(ctx *RestoreContext, st *restoreState) error {
	r, t := ctx.Obj, st.tenant
	src := r.Spec.Source
	data, err := renderDestination(ctx, ctx.Reader, r.Namespace, src.Data)
	if err != nil {
		return err
	}
	archive, err := renderDestination(ctx, ctx.Reader, r.Namespace, src.Archive)
	if err != nil {
		return err
	}
	until, err := build.RestoreSCN(src.Until)
	if err != nil {
		return framework.InvalidSpec(err)
	}
	zones := build.TenantZones(t)
	opts := obsql.RestoreOptions{Pools: build.PoolNames(t, zones), PrimaryZone: t.Spec.PrimaryZone,
		Locality: build.Locality(zones), UntilSCN: until}
	if src.DecryptionSecret != "" {
		if opts.Passwords, err = decryptionPasswords(ctx, ctx.Reader, r.Namespace, src.DecryptionSecret); err != nil {
			return err
		}
	}
	ctx.Log.Info("Restoring a tenant", "tenant", t.Spec.TenantName, "from", obsql.DestPath(data), "untilSCN", until)
	if err := obsql.RestoreTenant(ctx, st.db, t.Spec.TenantName, data, archive, opts); err != nil {
		return err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventRestoreStarted, "Started restoring tenant %s from %s", t.Spec.TenantName, obsql.DestPath(data))
	return nil
}

// Finalize releases the restore's login: deleting the record leaves the
// tenant to its OBTenant.
func (c *TenantRestoreController) Finalize(ctx *RestoreContext) (bool, error) {
	c.logins.release(restoreHolder(ctx.Obj))
	return true, nil
}

// decryptionPasswords reads a decryption Secret's passwords: its keys
// "password", then "password2", "password3"... in order.
func decryptionPasswords(ctx context.Context, r client.Reader, namespace, name string) ([]string, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", name, err)
	}
	var out []string
	for i := 1; ; i++ {
		key := framework.PasswordKey
		if i > 1 {
			key += strconv.Itoa(i)
		}
		pw, ok := s.Data[key]
		if !ok {
			break
		}
		out = append(out, string(pw))
	}
	if len(out) == 0 {
		return nil, framework.InvalidSpec(fmt.Errorf("secret %s has no key %q", name, framework.PasswordKey))
	}
	return out, nil
}
