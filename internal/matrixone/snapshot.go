package matrixone

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
)

// The Snapshot and SnapshotRestore controllers' RBAC.
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=snapshots;snapshotrestores,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=snapshots/status;snapshotrestores/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=snapshots/finalizers;snapshotrestores/finalizers,verbs=update

// The snapshot flow and its step, after stepWaitForCluster
// (docs/matrixone.md, "Snapshots").
const (
	flowSnapshot     = "snapshot"
	stepTakeSnapshot = "take-snapshot"
)

// Snapshot is the kind the snapshots' controller reconciles.
type Snapshot = mov1.Snapshot

// SnapshotContext is the framework's pass context of a Snapshot.
type SnapshotContext = framework.Context[*Snapshot]

// SnapshotController is the Snapshot actor: Observe starts the snapshot
// flow once, which waits for the cluster to be Ready and takes the
// snapshot; from then on every pass reads the snapshot back from
// MatrixOne into status and Ready. Finalize drops it.
type SnapshotController struct {
	opts Options
}

// NewSnapshotController returns a Snapshot controller.
func NewSnapshotController(opts Options) *SnapshotController {
	return &SnapshotController{opts: opts.withDefaults()}
}

func setupSnapshots(mgr ctrl.Manager, c *SnapshotController) error {
	_, err := framework.Setup(mgr, framework.Options[*Snapshot, *snapshotState]{
		Actor: c, App: build.App, PartOf: build.PartOf,
		Flows:  []framework.Flow[*Snapshot, *snapshotState]{c.snapshotFlow()},
		Resync: c.opts.Resync, ResyncNotReady: c.opts.ResyncNotReady,
	})
	return err
}

// snapshotState is what a pass observed of a Snapshot.
type snapshotState struct {
	// cluster is the Snapshot's cluster; nil when it does not exist.
	cluster *mov1.MatrixOneCluster
}

// Declare reads the cluster and, once the snapshot is taken, the snapshot
// as MatrixOne holds it, and says so in status and Ready.
func (c *SnapshotController) Declare(ctx *SnapshotContext) (*snapshotState, error) {
	s := ctx.Obj
	st := &snapshotState{}
	var err error
	if st.cluster, err = getCluster(ctx, ctx.Client, s.Namespace, s.Spec.Cluster); err != nil {
		return nil, err
	}
	op := s.Status.Operation
	switch {
	case s.Status.SnapshotName != "":
		c.readBack(ctx, st)
	case op.Running():
		ctx.SetReady(false, mov1.ReasonTakingSnapshot, "step "+op.Step)
	case op != nil:
		ctx.SetReady(false, mov1.ReasonBackupFailed, fmt.Sprintf("the snapshot %s at step %s: %s", strings.ToLower(string(op.Phase)), op.Step, op.LastError))
	default:
		ctx.SetReady(false, mov1.ReasonTakingSnapshot, "starting")
	}
	return st, nil
}

// readBack reads the taken snapshot from MatrixOne: Ready only while
// MatrixOne lists it.
func (c *SnapshotController) readBack(ctx *SnapshotContext, st *snapshotState) {
	s := ctx.Obj
	if st.cluster == nil || !st.cluster.DeletionTimestamp.IsZero() {
		ctx.SetReady(false, mov1.ReasonClusterGone, fmt.Sprintf("the MatrixOneCluster %s is gone, and its snapshots with it", s.Spec.Cluster))
		return
	}
	t, err := clusterCNTarget(ctx, ctx.Client, ctx.Reader, st.cluster)
	var info *mosql.SnapshotInfo
	if err == nil {
		info, err = c.opts.Snapshots.GetSnapshot(ctx, t, s.Status.SnapshotName)
	}
	switch {
	case err != nil:
		ctx.SetReady(false, mov1.ReasonClusterUnreachable, fmt.Sprintf("cannot read the snapshot from MatrixOne: %v", err))
	case info == nil:
		ctx.SetReady(false, mov1.ReasonSnapshotMissing, fmt.Sprintf("MatrixOne holds no snapshot %s: it was dropped outside Steward", s.Status.SnapshotName))
	case !ours(s, info) || strconv.FormatInt(info.TS, 10) != s.Status.SnapshotTS:
		ctx.SetReady(false, mov1.ReasonSnapshotMissing, fmt.Sprintf("MatrixOne's snapshot %s is not the one taken (of the account %q at %s): it was replaced outside Steward",
			info.Name, info.Account, info.Time().Format(time.RFC3339)))
	default:
		ctx.SetReady(true, "", fmt.Sprintf("MatrixOne holds the snapshot %s of the account %s, taken at %s",
			info.Name, info.Account, info.Time().Format(time.RFC3339)))
	}
}

// snapshotFinished reports whether s's flow ended: the snapshot taken, or
// the flow ended without taking it (failed, aborted, or skipped).
func snapshotFinished(s *Snapshot) bool {
	op := s.Status.Operation
	return s.Status.SnapshotName != "" || op != nil && op.Phase != commonv1.PhaseRunning
}

// Observe starts the snapshot flow, once: a Snapshot that failed is never
// taken again; create another.
func (*SnapshotController) Observe(ctx *SnapshotContext, _ *snapshotState) (framework.Action[*Snapshot], error) {
	s := ctx.Obj
	if s.Status.SnapshotName != "" || s.Status.Operation != nil {
		return nil, nil
	}
	return framework.StartFlow[*Snapshot](flowSnapshot, "Snapshot "+s.Name), nil
}

func (c *SnapshotController) snapshotFlow() framework.Flow[*Snapshot, *snapshotState] {
	return framework.Flow[*Snapshot, *snapshotState]{
		Name: flowSnapshot,
		Steps: []framework.Step[*Snapshot, *snapshotState]{
			{Name: stepWaitForCluster, Run: func(ctx *SnapshotContext, st *snapshotState) (bool, error) {
				return clusterServes(ctx.Log, ctx.Obj.Spec.Cluster, st.cluster), nil
			}},
			{Name: stepTakeSnapshot, Run: c.take},
		},
	}
}

// clusterServes reports whether the cluster exists and is Ready, logging
// why not: a statement through a cluster that is not serving would fail
// (or, for a backup, take what a half-started one has).
func clusterServes(log logr.Logger, name string, mc *mov1.MatrixOneCluster) bool {
	if mc == nil {
		log.V(1).Info("Waiting for the cluster to exist", "cluster", name)
		return false
	}
	if ok, why := framework.IsReady(mc); !ok {
		log.V(1).Info("Waiting for the cluster", "cluster", name, "why", why)
		return false
	}
	return true
}

// clockSkew is how far the CN's clock, which stamps a snapshot, may be
// behind the API server's, which stamps a Snapshot's creation.
const clockSkew = 2 * time.Minute

// ours reports whether the snapshot MatrixOne holds under s's name is s's:
// of s's account, and taken after s was created (allowing clockSkew). A
// pass that took the snapshot and lost its status write finds it so.
func ours(s *Snapshot, info *mosql.SnapshotInfo) bool {
	return info.Level == "account" && strings.EqualFold(info.Account, s.Spec.Account) &&
		!info.Time().Before(s.CreationTimestamp.Add(-clockSkew))
}

// take takes the snapshot under the Snapshot's name, unless MatrixOne
// holds one of that name already: s's own (an earlier pass's), which is
// adopted, or another's, which fails the flow (never dropped, never
// written over).
func (c *SnapshotController) take(ctx *SnapshotContext, st *snapshotState) (bool, error) {
	s := ctx.Obj
	t, err := clusterCNTarget(ctx, ctx.Client, ctx.Reader, st.cluster)
	if err != nil {
		return false, err
	}
	info, err := c.opts.Snapshots.GetSnapshot(ctx, t, s.Name)
	if err != nil {
		return false, err
	}
	if info == nil {
		switch ok, err := c.opts.Snapshots.AccountExists(ctx, t, s.Spec.Account); {
		case err != nil:
			return false, err
		case !ok:
			return false, framework.Terminal(fmt.Errorf("the cluster %s has no account %s", st.cluster.Name, s.Spec.Account))
		}
		if err := c.opts.Snapshots.CreateSnapshot(ctx, t, s.Name, s.Spec.Account); err != nil {
			return false, err
		}
		if info, err = c.opts.Snapshots.GetSnapshot(ctx, t, s.Name); err != nil || info == nil {
			return false, cmpOrErr(err, fmt.Errorf("MatrixOne does not list the snapshot %s it took", s.Name))
		}
	} else if !ours(s, info) {
		return false, framework.Terminal(fmt.Errorf("MatrixOne holds a snapshot %s already (of the account %q, taken at %s), not this Snapshot's: create the Snapshot under another name",
			s.Name, info.Account, info.Time().Format(time.RFC3339)))
	}
	s.Status.SnapshotName, s.Status.SnapshotTS, s.Status.SnapshotTime = info.Name, strconv.FormatInt(info.TS, 10), &metav1.Time{Time: info.Time()}
	ctx.Log.Info("Took a snapshot", "cluster", st.cluster.Name, "account", s.Spec.Account, "at", info.Time())
	ctx.Event(corev1.EventTypeNormal, mov1.EventSnapshotTaken, "Took the snapshot %s of the account %s of %s at %s",
		info.Name, s.Spec.Account, st.cluster.Name, info.Time().Format(time.RFC3339Nano))
	return true, nil
}

// cmpOrErr returns err when it is not nil, else fallback.
func cmpOrErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// Finalize drops the snapshot, once no SnapshotRestore restores from it:
// the one MatrixOne holds under the Snapshot's name, if it is the
// Snapshot's (ours). A cluster that is gone or going took its snapshots
// with it.
func (c *SnapshotController) Finalize(ctx *SnapshotContext) (bool, error) {
	s := ctx.Obj
	var restores mov1.SnapshotRestoreList
	if err := ctx.Client.List(ctx, &restores, client.InNamespace(s.Namespace)); err != nil {
		return false, fmt.Errorf("list SnapshotRestores: %w", err)
	}
	for i := range restores.Items {
		if r := &restores.Items[i]; r.Spec.Snapshot == s.Name && !restoreFinished(r) {
			ctx.SetReady(false, mov1.ReasonDeletionBlocked, fmt.Sprintf("the SnapshotRestore %s restores from the snapshot: it is dropped once that is done", r.Name))
			return false, nil
		}
	}
	mc, err := getCluster(ctx, ctx.Client, s.Namespace, s.Spec.Cluster)
	if err != nil || mc == nil || !mc.DeletionTimestamp.IsZero() {
		return err == nil, err
	}
	if s.Status.SnapshotName == "" && s.Status.Operation == nil {
		return true, nil // never taken
	}
	t, err := clusterCNTarget(ctx, ctx.Client, ctx.Reader, mc)
	if err != nil {
		ctx.SetReady(false, mov1.ReasonClusterUnreachable, fmt.Sprintf("cannot drop the snapshot: %v", err))
		return false, err
	}
	info, err := c.opts.Snapshots.GetSnapshot(ctx, t, s.Name)
	if err != nil || info == nil || !ours(s, info) {
		return err == nil, err
	}
	if err := c.opts.Snapshots.DropSnapshot(ctx, t, s.Name); err != nil {
		return false, err
	}
	ctx.Log.Info("Dropped the snapshot", "cluster", mc.Name, "snapshot", s.Name)
	ctx.Event(corev1.EventTypeNormal, mov1.EventSnapshotDropped, "Dropped the snapshot %s from %s", s.Name, mc.Name)
	return true, nil
}

// getCluster returns the MatrixOneCluster name; nil when it does not
// exist.
func getCluster(ctx context.Context, r client.Reader, namespace, name string) (*mov1.MatrixOneCluster, error) {
	mc := &mov1.MatrixOneCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get the MatrixOneCluster %s: %w", name, err)
	}
	return mc, nil
}

// clusterCNTarget is a ready CN of the cluster, as root: where
// administrative statements go (straight to a CN, as the operator reaches
// pods by IP; a restored cluster has no proxy yet).
// clusterCNPodNames are the names of the pods of mc's CN groups, as their
// specs size them.
func clusterCNPodNames(mc *mov1.MatrixOneCluster) []string {
	var names []string
	for _, g := range mc.Spec.CNGroups {
		for i := range int(ptr.Deref(g.Replicas, 1)) {
			names = append(names, fmt.Sprintf("%s-%d", build.ClusterCNSetName(mc, g.Name), i))
		}
	}
	return names
}

func clusterCNTarget(ctx context.Context, cached, live client.Reader, mc *mov1.MatrixOneCluster) (mosql.Target, error) {
	for _, name := range clusterCNPodNames(mc) {
		pod := &corev1.Pod{}
		if err := client.IgnoreNotFound(cached.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, pod)); err != nil {
			return mosql.Target{}, fmt.Errorf("the CN pod %s: %w", name, err)
		}
		if workload.IsReady(pod) && pod.Status.PodIP != "" {
			return rootTarget(ctx, cached, live, mc.Namespace, build.Sets(mc).Log.RootPasswordSecret(), pod)
		}
	}
	return mosql.Target{}, errors.New("no CN pod of the cluster is ready")
}
