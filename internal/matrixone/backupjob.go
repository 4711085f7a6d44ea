package matrixone

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// The BackupJob controller's RBAC, on top of the system's: the backup
// pod's Job, and the pods' termination messages.
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupjobs,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupjobs/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backupjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete

// The backup flow and its steps (docs/matrixone.md, "Backups").
const (
	flowBackup = "backup"

	stepWaitForCluster   = "wait-for-cluster"
	stepCheckDestination = "check-destination"
	stepRunBackup        = "run-backup"
	stepRecordBackup     = "record-backup"
)

// recordTimeout bounds how long a finished backup may take to read back
// complete from the store before the flow counts a failed attempt.
const recordTimeout = 5 * time.Minute

// BackupJob is the kind the backup jobs' controller reconciles.
type BackupJob = mov1.BackupJob

// BackupJobContext is the framework's pass context of a BackupJob.
type BackupJobContext = framework.Context[*BackupJob]

// BackupJobController is the BackupJob actor: Observe starts the backup
// flow once no older job of the same cluster is unfinished; the flow
// waits for the cluster to be Ready, checks the destination is empty, runs
// mo-agent backup in a Job of its own (so that the statement outlives an
// operator restart, and a restarted operator finds the Job and waits on),
// and records the result as a Backup, done once that Backup reads back
// complete from the store.
type BackupJobController struct {
	opts     Options
	clients  *s3Clients
	gateways backupGateways
}

// NewBackupJobController returns a BackupJob controller with opts.
func NewBackupJobController(opts Options) *BackupJobController {
	opts = opts.withDefaults()
	return &BackupJobController{opts: opts, clients: newS3Clients(), gateways: backupGateways{image: opts.BackupGatewayImage}}
}

func setupBackupJobs(mgr ctrl.Manager, c *BackupJobController) error {
	_, err := framework.Setup(mgr, framework.Options[*BackupJob, *backupJobState]{
		Actor: c, App: build.App, PartOf: build.PartOf,
		Flows:  []framework.Flow[*BackupJob, *backupJobState]{c.backupFlow()},
		Owns:   []client.Object{&batchv1.Job{}},
		Resync: c.opts.Resync, ResyncNotReady: c.opts.ResyncNotReady,
	})
	return err
}

// Default applies the API's defaults (mov1.DefaultBackupJob).
func (*BackupJobController) Default(j *BackupJob) { mov1.DefaultBackupJob(j) }

// Validate checks an S3 destination as shared storage is checked, and
// refuses what MatrixOne's BACKUP cannot take: a CA Secret; and a volume
// claim whose gateway could not be named after it.
func (*BackupJobController) Validate(j *BackupJob) error {
	errs := validateBackupDestination(field.NewPath("spec", "destination"), j.Spec.Destination)
	return append(errs, validateBackupTimeout(field.NewPath("spec", "timeout"), j.Spec.Timeout)...).ToAggregate()
}

// validateBackupTimeout checks the BACKUP statement's timeout: at least a
// minute.
func validateBackupTimeout(path *field.Path, t *metav1.Duration) field.ErrorList {
	if t != nil && t.Duration < time.Minute {
		return field.ErrorList{field.Invalid(path, t.Duration.String(), "must be at least 1m")}
	}
	return nil
}

// validateBackupDestination checks a BackupJob's (or a schedule's)
// destination: exactly one of s3 and volumeClaim (as the schema does).
func validateBackupDestination(path *field.Path, d mov1.BackupDestination) field.ErrorList {
	switch {
	case d.VolumeClaim != nil && d.S3 != nil:
		return field.ErrorList{field.Forbidden(path, "set exactly one of s3 and volumeClaim")}
	case d.VolumeClaim != nil:
		return validateBackupVolumeClaim(path.Child("volumeClaim", "claimName"), d.VolumeClaim.ClaimName)
	case d.S3 == nil:
		return field.ErrorList{field.Required(path, "set exactly one of s3 and volumeClaim")}
	}
	path = path.Child("s3")
	errs := validateS3(path, d.S3)
	if d.S3.CASecret != nil {
		errs = append(errs, field.Forbidden(path.Child("caSecret"),
			"MatrixOne 1.2.4's BACKUP statement takes no CA: use an endpoint whose certificate the image's system CAs verify, or http inside the cluster"))
	}
	return errs
}

// backupJobState is what a pass observed of a BackupJob.
type backupJobState struct {
	// cluster is the job's cluster; nil when it does not exist.
	cluster *mov1.MatrixOneCluster
	// queuedBehind is the oldest unfinished job of the same cluster that
	// is older than this one; nil when none.
	queuedBehind *BackupJob
}

// finished reports whether j's backup ended: recorded, or its flow ended
// without recording one (failed, aborted, or a step skipped by a rescue).
func finished(j *BackupJob) bool {
	op := j.Status.Operation
	return j.Status.Backup != "" || op != nil && op.Phase != commonv1.PhaseRunning
}

// Declare reads the job's cluster and the older jobs of the same cluster,
// and says in Ready where the job is.
func (c *BackupJobController) Declare(ctx *BackupJobContext) (*backupJobState, error) {
	j := ctx.Obj
	st := &backupJobState{}
	var err error
	if st.cluster, err = getCluster(ctx, ctx.Client, j.Namespace, j.Spec.Cluster); err != nil {
		return nil, err
	}
	var jobs mov1.BackupJobList
	if err := ctx.Client.List(ctx, &jobs, client.InNamespace(j.Namespace)); err != nil {
		return nil, fmt.Errorf("list BackupJobs: %w", err)
	}
	for i := range jobs.Items {
		other := &jobs.Items[i]
		if other.UID == j.UID || other.Spec.Cluster != j.Spec.Cluster || finished(other) || !framework.Older(other, j) {
			continue
		}
		if st.queuedBehind == nil || framework.Older(other, st.queuedBehind) {
			st.queuedBehind = other
		}
	}
	c.setReady(ctx, st)
	return st, nil
}

func (*BackupJobController) setReady(ctx *BackupJobContext, st *backupJobState) {
	j := ctx.Obj
	op := j.Status.Operation
	switch {
	case j.Status.Backup != "":
		ctx.SetReady(true, "", fmt.Sprintf("the backup is complete and recorded as the Backup %s", j.Status.Backup))
	case op != nil && op.Phase == commonv1.PhaseSucceeded:
		ctx.SetReady(false, mov1.ReasonBackupFailed, "the backup flow ended without recording a backup: a rescue skipped a step")
	case op != nil && op.Phase != commonv1.PhaseRunning:
		ctx.SetReady(false, mov1.ReasonBackupFailed, fmt.Sprintf("the backup %s at step %s: %s", strings.ToLower(string(op.Phase)), op.Step, op.LastError))
	case op != nil:
		ctx.SetReady(false, mov1.ReasonBackingUp, fmt.Sprintf("step %s", op.Step))
	case st.queuedBehind != nil:
		ctx.SetReady(false, mov1.ReasonQueued, fmt.Sprintf("the BackupJob %s of the same cluster has not finished; jobs of a cluster run one at a time",
			st.queuedBehind.Name))
	default:
		ctx.SetReady(false, mov1.ReasonBackingUp, "starting")
	}
}

// Observe starts the backup flow, once: a job that finished (recorded,
// failed or aborted) is never run again; create another.
func (*BackupJobController) Observe(ctx *BackupJobContext, st *backupJobState) (framework.Action[*BackupJob], error) {
	j := ctx.Obj
	if finished(j) || j.Status.Operation != nil || st.queuedBehind != nil {
		return nil, nil
	}
	return framework.StartFlow[*BackupJob](flowBackup, "BackupJob "+j.Name), nil
}

// Finalize lets the job go: its Job goes with it (owner reference), the
// Backup it recorded stays, and a partial backup left by a failed run
// stays where status.path says (it is not a Backup's; delete it by hand,
// or record it as a Backup with deletionPolicy Delete and delete that).
func (*BackupJobController) Finalize(*BackupJobContext) (bool, error) { return true, nil }

func (c *BackupJobController) backupFlow() framework.Flow[*BackupJob, *backupJobState] {
	return framework.Flow[*BackupJob, *backupJobState]{
		Name: flowBackup,
		Steps: []framework.Step[*BackupJob, *backupJobState]{
			{Name: stepWaitForCluster, Run: c.waitForCluster},
			{Name: stepCheckDestination, Run: c.checkDestination},
			{Name: stepRunBackup, Run: c.runBackup},
			{Name: stepRecordBackup, Run: c.recordBackup, Timeout: recordTimeout},
		},
	}
}

// backupJobOf returns the job's Job as the cache has it; nil when it does
// not exist.
func backupJobOf(ctx *BackupJobContext) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: ctx.Obj.Namespace, Name: build.BackupJobName(ctx.Obj)}, job)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return job, nil
}

// checkDestination records the backup's path and checks nothing is there
// yet: a backup never writes over objects. Once the job's Job exists
// (the step ran before an operator restart), what is there is its own.
func (c *BackupJobController) checkDestination(ctx *BackupJobContext, _ *backupJobState) (bool, error) {
	j := ctx.Obj
	if job, err := backupJobOf(ctx); err != nil || job != nil {
		return err == nil, err
	}
	// The Backup the job will record must not exist: found only after the
	// backup ran, it would leave the backup unrecorded.
	if err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &mov1.Backup{}); !apierrors.IsNotFound(err) {
		if err != nil {
			return false, err
		}
		return false, framework.Terminal(fmt.Errorf("a Backup %s exists: a job records its backup under its own name; create the job under another", j.Name))
	}
	if claim := j.Spec.Destination.VolumeClaim; claim != nil {
		// A gateway that does not serve yet is waited for, as a cluster
		// is: its pod takes seconds to start, a claim may come later.
		why, err := c.gateways.ensure(ctx, ctx.Client, ctx.Reader, j, claim.ClaimName)
		if why != "" {
			ctx.SetReady(false, mov1.ReasonBackingUp, fmt.Sprintf("step %s: waiting for the destination: %s", stepCheckDestination, why))
		}
		if why != "" || err != nil {
			return false, err
		}
	}
	dst := build.BackupDestinationS3(j.Namespace, j.Spec.Destination)
	dst.KeyPrefix = j.Status.Path
	cl, why, err := c.clients.forLocation(ctx, ctx.Reader, j.Namespace, j.UID, dst)
	if err != nil {
		return false, err
	}
	defer c.clients.forget(j.UID) // this step is the job's only use of the store
	if why != "" {
		return false, fmt.Errorf("the destination: %s", why)
	}
	if j.Spec.Destination.VolumeClaim != nil {
		// The gateway's bucket is a directory of the claim, which the
		// first backup makes.
		if _, err := cl.EnsureBucket(ctx); err != nil {
			return false, err
		}
	}
	empty, err := cl.IsEmpty(ctx, "")
	switch {
	case err != nil:
		return false, err
	case !empty:
		return false, framework.Terminal(fmt.Errorf("%s holds objects already: a backup never writes over them", claimLocation(dst)))
	}
	return true, nil
}

// waitForCluster waits for the cluster to exist and be Ready: a backup
// through a cluster that is not serving would fail, or take what a
// half-started one has.
func (*BackupJobController) waitForCluster(ctx *BackupJobContext, st *backupJobState) (bool, error) {
	ctx.Obj.Status.Path = build.BackupPath(ctx.Obj)
	if job, err := backupJobOf(ctx); err != nil || job != nil {
		return err == nil, err
	}
	if !clusterServes(ctx.Log, ctx.Obj.Spec.Cluster, st.cluster) {
		return false, nil
	}
	return st.cluster.Status.SQLAddress != "" && st.cluster.Status.RootPasswordSecret != "", nil
}

// runBackup creates the job's Job unless it exists, and waits for it: its
// pod's exit says whether MatrixOne completed the backup. A failed Job
// fails the flow (its pod's message says why); it is not retried, since
// it may have left a partial backup at the path.
func (*BackupJobController) runBackup(ctx *BackupJobContext, st *backupJobState) (bool, error) {
	j := ctx.Obj
	job, err := backupJobOf(ctx)
	if err != nil {
		return false, err
	}
	if job == nil && j.Status.StartedAt != nil {
		return false, framework.Terminal(fmt.Errorf("the backup Job %s was deleted after it started: the backup at %s may be partial; create another job",
			build.BackupJobName(j), j.Status.Path))
	}
	if job == nil {
		if st.cluster == nil {
			return false, fmt.Errorf("the MatrixOneCluster %s does not exist", j.Spec.Cluster)
		}
		job = build.BackupJobPod(j, st.cluster)
		if err := ctx.Apply(job, build.ComponentBackup); err != nil {
			return false, err
		}
		j.Status.StartedAt = &metav1.Time{Time: time.Now()}
		ctx.Log.Info("Started the backup", "job", job.Name, "cluster", j.Spec.Cluster, "path", j.Status.Path)
		ctx.Event(corev1.EventTypeNormal, mov1.EventBackupStarted, "Started the Job %s: a full backup of %s to %s",
			job.Name, j.Spec.Cluster, j.Status.Path)
		return false, nil
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return false, framework.Terminal(fmt.Errorf("the backup Job %s failed (%s): %s%s", job.Name, cond.Reason, cond.Message,
				podMessage(ctx, job)))
		}
	}
	return false, nil
}

// podMessage returns ": " and the termination message of the Job's pod,
// or "" when none can be read.
func podMessage(ctx *BackupJobContext, job *batchv1.Job) string {
	var pods corev1.PodList
	if err := ctx.Client.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{"job-name": job.Name}); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.Message != "" {
				return "; the pod said: " + strings.TrimSpace(t.Message)
			}
		}
	}
	return ""
}

// recordBackup creates the job's Backup unless it exists, and is done once
// the Backup controller has read it back complete from the store.
func (*BackupJobController) recordBackup(ctx *BackupJobContext, _ *backupJobState) (bool, error) {
	j := ctx.Obj
	want := backupRecord(j)
	b := &mov1.Backup{}
	created, err := framework.CreateIfAbsent(ctx, ctx.Client, ctx.Reader, client.ObjectKeyFromObject(want), b,
		func() client.Object { return want })
	if err != nil {
		return false, fmt.Errorf("record the Backup %s: %w", want.Name, err)
	}
	if created {
		ctx.Log.Info("Recorded the backup", "backup", want.Name, "path", j.Status.Path)
		return false, nil
	}
	if b.Spec.Location.Bucket != want.Spec.Location.Bucket || b.Spec.Location.KeyPrefix != want.Spec.Location.KeyPrefix {
		return false, framework.Terminal(fmt.Errorf("a Backup %s of another location (%s) exists: the backup at %s is not recorded",
			b.Name, b.Spec.Location.KeyPrefix, j.Status.Path))
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, framework.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != b.Generation {
		return false, nil
	}
	j.Status.Backup, j.Status.CompletedAt = b.Name, &metav1.Time{Time: time.Now()}
	ctx.Event(corev1.EventTypeNormal, mov1.EventBackupRecorded, "Recorded the Backup %s: %d objects, %d bytes, consistent at %s",
		b.Name, b.Status.Objects, b.Status.SizeBytes, b.Status.BackupTS)
	return true, nil
}

// claimName is the destination's volume claim, "" when it is S3.
func claimName(d mov1.BackupDestination) string {
	if d.VolumeClaim == nil {
		return ""
	}
	return d.VolumeClaim.ClaimName
}

// backupRecord is the Backup a job records: its name, the cluster, the
// destination at the job's path and the job's deletion policy.
func backupRecord(j *BackupJob) *mov1.Backup {
	loc := build.BackupDestinationS3(j.Namespace, j.Spec.Destination)
	loc.KeyPrefix = j.Status.Path
	labels := build.Labels(j.Name, build.ComponentBackup)
	if s := j.Labels[build.LabelBackupSchedule]; s != "" {
		labels[build.LabelBackupSchedule] = s
	}
	return &mov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name, Labels: labels},
		Spec: mov1.BackupSpec{Cluster: j.Spec.Cluster, Location: loc, VolumeClaim: claimName(j.Spec.Destination),
			DeletionPolicy: j.Spec.DeletionPolicy},
	}
}
