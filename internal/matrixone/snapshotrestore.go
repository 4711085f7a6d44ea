package matrixone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
)

// The snapshot restore flow and its steps (docs/matrixone.md, "Snapshots").
const (
	flowSnapshotRestore = "snapshot-restore"

	stepCheckSnapshot  = "check-snapshot"
	stepRestoreAccount = "restore-account"
)

// Bounds of a snapshot restore's steps.
const (
	// snapshotWaitTimeout bounds how long a restore waits for its Snapshot
	// to exist and be Ready (created in the same apply, say).
	snapshotWaitTimeout = 10 * time.Minute
	// snapshotRestoreTimeout bounds MatrixOne's RESTORE statement.
	snapshotRestoreTimeout = time.Hour
)

// SnapshotRestore is the kind the snapshot restores' controller reconciles.
type SnapshotRestore = mov1.SnapshotRestore

// SnapshotRestoreContext is the framework's pass context of a
// SnapshotRestore.
type SnapshotRestoreContext = framework.Context[*SnapshotRestore]

// SnapshotRestoreController is the SnapshotRestore actor: Observe starts
// the restore flow once no older restore of the same cluster is
// unfinished; the flow waits for the Snapshot to be Ready and its cluster
// to serve, checks the target account, and runs RESTORE ACCOUNT in the
// background, once (status.startedAt is written when it is sent; a run
// lost to an operator restart fails the flow instead of restoring twice).
type SnapshotRestoreController struct {
	opts       Options
	background *framework.Background
	// runs holds, by restore, what this process knows of its statement:
	// the startedAt it wrote before sending (the statement is sent only
	// once that write is read back), and the outcome until status shows
	// it. An operator that restarted knows nothing: a restore whose
	// status says it started is then never sent again.
	mu   sync.Mutex
	runs map[types.UID]*restoreRun
}

// restoreRun is what this process knows of a restore's statement.
type restoreRun struct {
	// intent is the startedAt this process wrote before sending.
	intent metav1.Time
	// sent: the statement was sent; done and err: its outcome.
	sent, done bool
	err        error
}

// NewSnapshotRestoreController returns a SnapshotRestore controller.
func NewSnapshotRestoreController(opts Options) *SnapshotRestoreController {
	return &SnapshotRestoreController{opts: opts.withDefaults(), background: framework.NewBackground(), runs: map[types.UID]*restoreRun{}}
}

func setupSnapshotRestores(mgr ctrl.Manager, c *SnapshotRestoreController) error {
	_, err := framework.Setup(mgr, framework.Options[*SnapshotRestore, *snapshotRestoreState]{
		Actor: c, App: build.App, PartOf: build.PartOf,
		Flows:  []framework.Flow[*SnapshotRestore, *snapshotRestoreState]{c.restoreFlow()},
		Resync: c.opts.Resync, ResyncNotReady: c.opts.ResyncNotReady,
	})
	return err
}

// Validate refuses a restore that was not confirmed (the schema does too).
func (*SnapshotRestoreController) Validate(r *SnapshotRestore) error {
	if !r.Spec.Overwrite {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "overwrite"), false,
			"must be true: a restore replaces the target account's databases with the snapshot's")}.ToAggregate()
	}
	return nil
}

// snapshotRestoreState is what a pass observed of a SnapshotRestore.
type snapshotRestoreState struct {
	// snapshot is the Snapshot restored from; nil when it does not exist.
	snapshot *Snapshot
	// cluster is the snapshot's cluster; nil when either does not exist.
	cluster *mov1.MatrixOneCluster
	// queuedBehind is the oldest unfinished restore of the same cluster
	// that is older than this one; nil when none.
	queuedBehind *SnapshotRestore
}

// restoreFinished reports whether r's restore ended: completed, or its
// flow ended without completing (failed, aborted, or skipped by a rescue).
func restoreFinished(r *SnapshotRestore) bool {
	op := r.Status.Operation
	return r.Status.CompletedAt != nil || op != nil && op.Phase != commonv1.PhaseRunning
}

// Declare reads the Snapshot, its cluster and the older restores of the
// same cluster, and says in Ready where the restore is.
func (c *SnapshotRestoreController) Declare(ctx *SnapshotRestoreContext) (*snapshotRestoreState, error) {
	r := ctx.Obj
	st := &snapshotRestoreState{}
	snap := &Snapshot{}
	switch err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.Snapshot}, snap); {
	case err == nil:
		st.snapshot = snap
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get the Snapshot %s: %w", r.Spec.Snapshot, err)
	}
	cluster := r.Status.Cluster
	if st.snapshot != nil && cluster == "" {
		cluster = st.snapshot.Spec.Cluster
	}
	if cluster != "" {
		var err error
		if st.cluster, err = getCluster(ctx, ctx.Client, r.Namespace, cluster); err != nil {
			return nil, err
		}
		var restores mov1.SnapshotRestoreList
		if err := ctx.Client.List(ctx, &restores, client.InNamespace(r.Namespace)); err != nil {
			return nil, fmt.Errorf("list SnapshotRestores: %w", err)
		}
		var snapshots mov1.SnapshotList
		if err := ctx.Client.List(ctx, &snapshots, client.InNamespace(r.Namespace)); err != nil {
			return nil, fmt.Errorf("list Snapshots: %w", err)
		}
		clusterOf := map[string]string{}
		for _, sn := range snapshots.Items {
			clusterOf[sn.Name] = sn.Spec.Cluster
		}
		for i := range restores.Items {
			other := &restores.Items[i]
			otherCluster := cmp.Or(other.Status.Cluster, clusterOf[other.Spec.Snapshot])
			if other.UID == r.UID || otherCluster != cluster || restoreFinished(other) || !framework.Older(other, r) {
				continue
			}
			if st.queuedBehind == nil || framework.Older(other, st.queuedBehind) {
				st.queuedBehind = other
			}
		}
	}
	if restoreFinished(r) {
		c.forget(r.UID)
	}
	c.setReady(ctx, st)
	return st, nil
}

func (*SnapshotRestoreController) setReady(ctx *SnapshotRestoreContext, st *snapshotRestoreState) {
	r := ctx.Obj
	op := r.Status.Operation
	switch {
	case r.Status.CompletedAt != nil:
		ctx.SetReady(true, "", fmt.Sprintf("the account %s is restored from the snapshot %s", r.Status.TargetAccount, r.Spec.Snapshot))
	case op != nil && op.Phase == commonv1.PhaseSucceeded:
		ctx.SetReady(false, mov1.ReasonBackupFailed, "the restore flow ended without restoring: a rescue skipped a step")
	case op != nil && op.Phase != commonv1.PhaseRunning:
		ctx.SetReady(false, mov1.ReasonBackupFailed, fmt.Sprintf("the restore %s at step %s: %s", strings.ToLower(string(op.Phase)), op.Step, op.LastError))
	case op != nil:
		ctx.SetReady(false, mov1.ReasonRestoring, fmt.Sprintf("step %s", op.Step))
	case st.queuedBehind != nil:
		ctx.SetReady(false, mov1.ReasonQueued, fmt.Sprintf("the SnapshotRestore %s of the same cluster has not finished; restores of a cluster run one at a time",
			st.queuedBehind.Name))
	default:
		ctx.SetReady(false, mov1.ReasonRestoring, "starting")
	}
}

// Observe starts the restore flow, once: a restore that finished is never
// run again; create another.
func (*SnapshotRestoreController) Observe(ctx *SnapshotRestoreContext, st *snapshotRestoreState) (framework.Action[*SnapshotRestore], error) {
	r := ctx.Obj
	if restoreFinished(r) || r.Status.Operation != nil || st.queuedBehind != nil {
		return nil, nil
	}
	return framework.StartFlow[*SnapshotRestore](flowSnapshotRestore, "SnapshotRestore "+r.Name), nil
}

// Finalize lets the restore go once its statement is not running here
// (it would run on without it, beside a new restore of the same name, and
// its Snapshot could be dropped under it).
func (c *SnapshotRestoreController) Finalize(ctx *SnapshotRestoreContext) (bool, error) {
	if run := c.run(ctx.Obj.UID); run != nil && run.sent && !run.done {
		if state, _ := c.background.Poll(ctx.Obj.UID); state == framework.RunRunning {
			ctx.Log.Info("Waiting for the restore's statement before letting the SnapshotRestore go")
			return false, nil
		}
	}
	c.forget(ctx.Obj.UID)
	return true, nil
}

func (c *SnapshotRestoreController) restoreFlow() framework.Flow[*SnapshotRestore, *snapshotRestoreState] {
	return framework.Flow[*SnapshotRestore, *snapshotRestoreState]{
		Name: flowSnapshotRestore,
		Steps: []framework.Step[*SnapshotRestore, *snapshotRestoreState]{
			{Name: stepCheckSnapshot, Run: c.checkSnapshot, Timeout: snapshotWaitTimeout},
			{Name: stepRestoreAccount, Run: c.restoreAccount},
		},
	}
}

// checkSnapshot waits for the Snapshot to be Ready and its cluster to
// serve, records what is restored where, and checks the target account
// exists and may take the snapshot.
func (c *SnapshotRestoreController) checkSnapshot(ctx *SnapshotRestoreContext, st *snapshotRestoreState) (bool, error) {
	r := ctx.Obj
	if st.snapshot == nil {
		ctx.Log.V(1).Info("Waiting for the Snapshot to exist", "snapshot", r.Spec.Snapshot)
		return false, nil
	}
	snap := st.snapshot
	if !snap.DeletionTimestamp.IsZero() {
		return false, framework.Terminal(fmt.Errorf("the Snapshot %s is being deleted", snap.Name))
	}
	r.Status.Cluster, r.Status.Account = snap.Spec.Cluster, snap.Spec.Account
	r.Status.TargetAccount = cmp.Or(r.Spec.TargetAccount, snap.Spec.Account)
	if ok, why := framework.IsReady(snap); !ok {
		ctx.Log.V(1).Info("Waiting for the Snapshot", "snapshot", snap.Name, "why", why)
		return false, nil
	}
	if st.queuedBehind != nil || !clusterServes(ctx.Log, snap.Spec.Cluster, st.cluster) {
		return false, nil
	}
	if strings.EqualFold(r.Status.TargetAccount, "sys") && !strings.EqualFold(snap.Spec.Account, "sys") {
		return false, framework.Terminal(fmt.Errorf("the snapshot is of the account %s: MatrixOne restores only a snapshot of sys into sys", snap.Spec.Account))
	}
	t, err := clusterCNTarget(ctx, ctx.Client, ctx.Reader, st.cluster)
	if err != nil {
		return false, err
	}
	switch ok, err := c.opts.Snapshots.AccountExists(ctx, t, r.Status.TargetAccount); {
	case err != nil:
		return false, err
	case !ok:
		return false, framework.Terminal(fmt.Errorf("the cluster %s has no account %s: create it first (CREATE ACCOUNT)", st.cluster.Name, r.Status.TargetAccount))
	}
	return true, nil
}

// run returns what this process knows of r's statement; nil when nothing.
func (c *SnapshotRestoreController) run(uid types.UID) *restoreRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[uid]
}

// forget drops what this process knows of r's statement.
func (c *SnapshotRestoreController) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, uid)
}

// restoreAccount runs RESTORE ACCOUNT in the background and waits for it,
// sending it once. The pass before sending writes status.startedAt (the
// intent) and remembers it; the statement goes only in a later pass that
// reads that startedAt back from the API server, so a written startedAt
// precedes every send. A restore whose status says it started but of
// which this process knows nothing (the operator restarted) fails instead
// of being sent again: MatrixOne runs a restore as one transaction, so the
// account is either restored or as it was, but a second run would also
// undo whatever was written since the first. The outcome is kept in memory
// until status shows it, so a lost status write does not lose it.
func (c *SnapshotRestoreController) restoreAccount(ctx *SnapshotRestoreContext, st *snapshotRestoreState) (bool, error) {
	r := ctx.Obj
	run := c.run(r.UID)
	if run != nil && run.sent && !run.done {
		switch state, err := c.background.Poll(r.UID); state {
		case framework.RunRunning:
			return false, nil
		case framework.RunFinished:
			c.mu.Lock()
			run.done, run.err = true, err
			c.mu.Unlock()
		case framework.RunNone:
			c.mu.Lock()
			run.done, run.err = true, errors.New("the restore's run was lost")
			c.mu.Unlock()
		}
	}
	switch {
	case run != nil && run.done && run.err == nil:
		r.Status.StartedAt = &run.intent
		r.Status.CompletedAt = &metav1.Time{Time: time.Now()}
		ctx.Log.Info("Restored an account from a snapshot", "snapshot", r.Spec.Snapshot, "account", r.Status.TargetAccount)
		ctx.Event(corev1.EventTypeNormal, mov1.EventRestored, "Restored the account %s from the snapshot %s (of %s)",
			r.Status.TargetAccount, r.Spec.Snapshot, r.Status.Account)
		return true, nil
	case run != nil && run.done:
		// MatrixOne's own answer means the restore's transaction did not
		// commit: a transient one is sent again (a TN restart moves the
		// lock tables: "lock table bind changed").
		refused, transient := mosql.Refused(run.err)
		if refused || errors.Is(run.err, mosql.ErrNotSent) {
			c.forget(r.UID)
			r.Status.StartedAt = nil
		}
		switch {
		case transient || errors.Is(run.err, mosql.ErrNotSent):
			return false, run.err
		case refused:
			return false, framework.Terminal(fmt.Errorf("MatrixOne refused the restore, which did not commit: %w", run.err))
		}
		return false, framework.Terminal(fmt.Errorf("the restore's answer is lost, so it may or may not have committed: %w", run.err))
	case run != nil && run.sent:
		return false, nil
	}

	// Not sent by this process. startedAt set by another (or by an earlier
	// life of this one) means it may have been sent.
	if r.Status.StartedAt != nil && (run == nil || !r.Status.StartedAt.Equal(&run.intent)) {
		if run == nil {
			return false, framework.Terminal(fmt.Errorf("the restore was started at %s and its outcome is not known here (the operator restarted, or its answer was lost): "+
				"MatrixOne runs a restore as one transaction, so the account %s is either restored or as it was; look, and create another SnapshotRestore to run it again",
				r.Status.StartedAt.UTC().Format(time.RFC3339), r.Status.TargetAccount))
		}
		return false, nil // the intent's write is not read back yet
	}
	if st.queuedBehind != nil || st.snapshot == nil || st.cluster == nil {
		return false, nil
	}
	if r.Status.StartedAt == nil {
		// The intent: written by this pass, sent by a later one that reads
		// it back.
		intent := metav1.NewTime(time.Now().Truncate(time.Second))
		c.mu.Lock()
		c.runs[r.UID] = &restoreRun{intent: intent}
		c.mu.Unlock()
		r.Status.StartedAt = &intent
		return false, nil
	}
	t, err := clusterCNTarget(ctx, ctx.Client, ctx.Reader, st.cluster)
	if err != nil {
		return false, err
	}
	account, name, target := r.Status.Account, st.snapshot.Status.SnapshotName, r.Status.TargetAccount
	c.mu.Lock()
	run.sent = true
	c.mu.Unlock()
	c.background.Start(r.UID, snapshotRestoreTimeout, func(bg context.Context) error {
		return c.opts.Snapshots.RestoreAccount(bg, t, account, name, target)
	})
	ctx.Log.Info("Restoring an account from a snapshot", "snapshot", name, "account", account, "target", target)
	ctx.Event(corev1.EventTypeNormal, mov1.EventRestoreStarted, "Restoring the account %s from the snapshot %s (of %s, taken at %s)",
		target, name, account, st.snapshot.Status.SnapshotTime.UTC().Format(time.RFC3339))
	return false, nil
}
