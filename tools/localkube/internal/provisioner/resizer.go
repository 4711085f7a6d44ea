package provisioner

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// provisionedBy is the annotation the provisioner library puts on the
// volumes it provisions.
const provisionedBy = "pv.kubernetes.io/provisioned-by"

// Resize expands every bound claim whose volume this provisioner made
// (provisionerName) and whose request is larger than its capacity, as a
// CSI driver's external resizer does: a hostPath directory has no size to
// change (one with a filesystem of its own, FilesystemParameter, is left
// as it is), so the volume's capacity and the claim's status capacity are
// raised to the request and the resize conditions cleared. The API server
// lets a claim's request grow only where its StorageClass allows volume
// expansion (allowVolumeExpansion), as on any cluster.
func Resize(ctx context.Context, client kubernetes.Interface, provisionerName string) error {
	claims, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok || pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
			continue
		}
		if have := pvc.Status.Capacity[corev1.ResourceStorage]; have.Cmp(want) >= 0 {
			continue
		}
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get volume %s of claim %s/%s: %w", pvc.Spec.VolumeName, pvc.Namespace, pvc.Name, err)
		}
		if pv.Annotations[provisionedBy] != provisionerName || pv.Spec.HostPath == nil {
			continue
		}
		if _, err := os.Stat(imagePath(pv.Spec.HostPath.Path)); err == nil {
			log.Printf("Volume %s of claim %s/%s has a filesystem of its own, which cannot grow here (%s)", pv.Name, pvc.Namespace, pvc.Name, FilesystemParameter)
			continue
		}
		if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
			pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
			if _, err := client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("expand volume %s: %w", pv.Name, err)
			}
		}
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
		if pvc.Status.AllocatedResources != nil {
			pvc.Status.AllocatedResources[corev1.ResourceStorage] = want
		}
		delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
		var kept []corev1.PersistentVolumeClaimCondition
		for _, c := range pvc.Status.Conditions {
			if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending &&
				c.Type != corev1.PersistentVolumeClaimControllerResizeError && c.Type != corev1.PersistentVolumeClaimNodeResizeError {
				kept = append(kept, c)
			}
		}
		pvc.Status.Conditions = kept
		if _, err := client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("record the expansion of claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		log.Printf("Expanded volume %s of claim %s/%s to %s", pv.Name, pvc.Namespace, pvc.Name, want.String())
	}
	return nil
}

// resizeLoop runs Resize every interval until ctx ends; an error is
// logged and retried at the next round.
func resizeLoop(ctx context.Context, client kubernetes.Interface, provisionerName string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := Resize(ctx, client, provisionerName); err != nil && ctx.Err() == nil {
				log.Printf("Resize: %v", err)
			}
		}
	}
}
