package matrixone

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
)

// A MatrixOneCluster with spec.restoreFrom finishes its LogSet's restore
// (logset_restore.go) before any client reaches it: once the log stores,
// the TN and the CNs serve the restored data, the finish-restore flow
// forces a global checkpoint and restarts the TN once, and only then does
// the cluster create its proxies (and then restarts its CNs: one up across
// the TN's restart was seen, restoring a 90 MiB backup, never to serve
// again until its pod was restarted). The checkpoint is what makes writes
// after the restore durable: a global checkpoint restored from the backup
// keeps the source's WAL position, and a TN restarted later would skip
// every new WAL entry below it (reproduced: rows and a table written after
// a restore were gone after one TN restart, with no error;
// docs/design/matrixone-data.md). The TN restart proves the restored TN
// replays from the forced checkpoint, as every later restart will.

// The finish-restore flow and its steps.
const (
	flowFinishRestore = "finish-restore"

	stepGlobalCheckpoint = "global-checkpoint"
	stepRestartTN        = "restart-tn"
	stepRestartCNs       = "restart-cns"
)

// clusterRestoring reports whether c's restore has not completed.
func clusterRestoring(c *Cluster) bool {
	return c.Spec.RestoreFrom != nil && (c.Status.Restore == nil || c.Status.Restore.CompletedAt == nil)
}

// recordRestore copies the LogSet's restore progress into the cluster's
// status, keeping what the cluster's own steps recorded.
func recordRestore(c *Cluster, log *mov1.LogSet) {
	if c.Spec.RestoreFrom == nil || log.Status.Restore == nil {
		return
	}
	own := c.Status.Restore
	c.Status.Restore = log.Status.Restore.DeepCopy()
	if own != nil {
		c.Status.Restore.RestartedTN, c.Status.Restore.RestartedCNs, c.Status.Restore.CompletedAt =
			own.RestartedTN, own.RestartedCNs, own.CompletedAt
	}
}

// readyToFinishRestore reports whether c restores and every set but the
// proxies (not created yet) is Ready: the restored data is served.
func readyToFinishRestore(c *Cluster) bool {
	if !clusterRestoring(c) || len(c.Status.Sets) == 0 {
		return false
	}
	for _, s := range c.Status.Sets {
		if s.Kind != "ProxySet" && !s.Ready {
			return false
		}
	}
	return true
}

func (c *ClusterController) finishRestoreFlow() framework.Flow[*Cluster, framework.Nothing] {
	return framework.Flow[*Cluster, framework.Nothing]{
		Name: flowFinishRestore,
		Steps: []framework.Step[*Cluster, framework.Nothing]{
			{Name: stepGlobalCheckpoint, Run: c.globalCheckpoint},
			{Name: stepRestartTN, Run: c.restartTN, Timeout: 10 * time.Minute},
			{Name: stepRestartCNs, Run: c.restartCNs, Timeout: 10 * time.Minute},
		},
	}
}

// cnTarget is a ready CN of the cluster, as root: where the restore's
// statements go (there is no proxy yet).
func (c *ClusterController) cnTarget(ctx *ClusterContext) (mosql.Target, error) {
	return clusterCNTarget(ctx, ctx.Client, ctx.Reader, ctx.Obj)
}

// globalCheckpointTimeout bounds the forced global checkpoint, which
// writes every table's data not yet in one.
const globalCheckpointTimeout = 10 * time.Minute

// globalCheckpoint forces the TN's global checkpoint, in the background
// (it takes as long as the data takes to write; a step must not block).
// After an operator restart the run is lost and started again: a second
// forced checkpoint is harmless.
func (c *ClusterController) globalCheckpoint(ctx *ClusterContext, _ framework.Nothing) (bool, error) {
	mc := ctx.Obj
	switch state, err := c.background.Poll(mc.UID); {
	case state == framework.RunRunning:
		return false, nil
	case state == framework.RunFinished && err != nil:
		return false, err
	case state == framework.RunFinished:
		ctx.Log.Info("Forced a global checkpoint of the restored cluster")
		return true, nil
	}
	t, err := c.cnTarget(ctx)
	if err != nil {
		return false, err
	}
	c.background.Start(mc.UID, globalCheckpointTimeout, func(bg context.Context) error { return c.admin.GlobalCheckpoint(bg, t) })
	return false, nil
}

// restartTN restarts the TN's pod once, then waits for the TNSet to be
// Ready again. Once, even across operator restarts: the pod to restart is
// recorded first (its UID, in status.restore.restartedTN, written by this
// pass), and a later pass deletes a pod only while it is that one.
func (c *ClusterController) restartTN(ctx *ClusterContext, _ framework.Nothing) (bool, error) {
	mc := ctx.Obj
	r := restoreStatus(mc)
	tn := build.Sets(mc).TN
	name := tn.Name + "-0"
	pod := &corev1.Pod{}
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, pod)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	switch {
	case r.RestartedTN == "" && err != nil:
		return false, fmt.Errorf("the TN pod %s: %w", name, err)
	case r.RestartedTN == "":
		r.RestartedTN = string(pod.UID)
		return false, nil
	case err != nil:
		return false, nil // deleted; its StatefulSet makes it again
	case string(pod.UID) == r.RestartedTN:
		deleted, err := restartPod(ctx, pod)
		if deleted {
			ctx.Log.Info("Restarting the restored TN from the forced checkpoint", "pod", name)
		}
		return false, err
	case !workload.IsReady(pod):
		return false, nil
	}
	live := &mov1.TNSet{}
	if err := ctx.Client.Get(ctx, client.ObjectKeyFromObject(tn), live); err != nil {
		return false, err
	}
	ok, _ := framework.IsReady(live)
	return ok, nil
}

// restartCNs restarts every CN pod once, after the TN's restart, then
// waits for them to be ready and for a CN to read the catalog through the
// TN; then the restore is complete and the proxies start. Once, even
// across operator restarts: the pods are recorded first (their UIDs, in
// status.restore.restartedCNs), and a pod is deleted only while it is one
// of them.
func (c *ClusterController) restartCNs(ctx *ClusterContext, _ framework.Nothing) (bool, error) {
	mc := ctx.Obj
	r := restoreStatus(mc)
	var pods []*corev1.Pod
	for _, name := range clusterCNPodNames(mc) {
		pod := &corev1.Pod{}
		if err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, pod); err != nil {
			// Not found: deleted, and its StatefulSet makes it again.
			return false, client.IgnoreNotFound(err)
		}
		pods = append(pods, pod)
	}
	if r.RestartedCNs == nil {
		r.RestartedCNs = make([]string, 0, len(pods))
		for _, pod := range pods {
			r.RestartedCNs = append(r.RestartedCNs, string(pod.UID))
		}
		return false, nil
	}
	waiting := false
	for _, pod := range pods {
		switch {
		case slices.Contains(r.RestartedCNs, string(pod.UID)):
			deleted, err := restartPod(ctx, pod)
			if deleted {
				ctx.Log.Info("Restarting a CN of the restored cluster after the TN's restart", "pod", pod.Name)
			}
			if err != nil || deleted {
				return false, err
			}
			waiting = true
		case !workload.IsReady(pod):
			waiting = true
		}
	}
	if waiting {
		return false, nil
	}
	t, err := c.cnTarget(ctx)
	if err != nil {
		return false, nil //nolint:nilerr // no CN ready yet after the restarts: wait
	}
	if err := c.admin.Serving(ctx, t); err != nil {
		ctx.Log.V(1).Info("Waiting for the CN to serve after the restarts", "error", err.Error())
		return false, nil
	}
	r.CompletedAt = &metav1.Time{Time: time.Now()}
	ctx.Event(corev1.EventTypeNormal, mov1.EventRestored, "Restored from the Backup %s, consistent at %s: the proxies start",
		mc.Spec.RestoreFrom.Backup, r.BackupTS)
	return true, nil
}

// restoreStatus returns mc's status.restore, made if it is not there.
func restoreStatus(mc *Cluster) *mov1.RestoreStatus {
	if mc.Status.Restore == nil {
		mc.Status.Restore = &mov1.RestoreStatus{}
	}
	return mc.Status.Restore
}

// restartPod deletes pod unless it is going already, only while it has
// the UID it was read with (its StatefulSet makes it again), and reports
// whether it sent the deletion.
func restartPod(ctx *ClusterContext, pod *corev1.Pod) (bool, error) {
	if !pod.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})); err != nil {
		return false, fmt.Errorf("restart the pod %s: %w", pod.Name, err)
	}
	return true, nil
}
