//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/test/chaos"
)

// chaosSizedClass is the StorageClass of the volumes the fill-volume fault
// fills: localkube's provisioner with the filesystem parameter, so that
// each volume is an ext4 filesystem of its claim's size (a plain localkube
// volume is a directory of the node's disk: full only when the node's disk
// is). Such volumes do not grow.
const chaosSizedClass = "chaos-sized"

// chaosFillFile is the file the fault fills a volume with, at its root.
const chaosFillFile = ".chaos-fill"

// sizedStorageClass makes chaosSizedClass, from the default class's
// provisioner, once per cluster, and returns its name.
func sizedStorageClass(t *testing.T) *string {
	t.Helper()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: chaosSizedClass}, Provisioner: defaultProvisioner(t),
		Parameters: map[string]string{"filesystem": "ext4"}, AllowVolumeExpansion: ptr.To(false),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if _, err := env.client.StorageV1().StorageClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fatalNow(t, err)
	}
	return ptr.To(chaosSizedClass)
}

// fillVolumeFault fills the sized volumes of one running pod of the
// component for 10–30 s, then frees them: the system gets ENOSPC as from
// a full disk (a server that must write to go on stops, or crashes and
// crash-loops until the space is back).
func fillVolumeFault(ns, component string) chaos.Action {
	return chaos.Action{Name: "fill-" + component + "-volume", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
		pods, err := runningPods(ctx, ns, "app.kubernetes.io/component="+component)
		if err != nil {
			return "", err
		}
		pod, err := pickPod(r, pods)
		if err != nil {
			return "", err
		}
		return faultFillVolume(ctx, pod, chaos.Between(r, 10*time.Second, 30*time.Second))
	}}
}

// faultFillVolume fills every volume of the pod of chaosSizedClass, from
// the node (its directory is the filesystem's mount point), for d, and
// removes what it wrote: the volume's data is left as the system made it.
func faultFillVolume(ctx context.Context, pod corev1.Pod, d time.Duration) (string, error) {
	var dirs []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := env.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if ptr.Deref(pvc.Spec.StorageClassName, "") != chaosSizedClass || pvc.Spec.VolumeName == "" {
			continue
		}
		pv, err := env.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if pv.Spec.HostPath == nil {
			return "", fmt.Errorf("volume %s of claim %s is not localkube's", pv.Name, pvc.Name)
		}
		dirs = append(dirs, pv.Spec.HostPath.Path)
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("pod %s has no volume of StorageClass %s", pod.Name, chaosSizedClass)
	}
	var filled []string
	defer func() {
		for _, dir := range dirs {
			_ = os.Remove(filepath.Join(dir, chaosFillFile))
		}
	}()
	for _, dir := range dirs {
		n, err := fillDir(dir)
		if err != nil {
			return "", err
		}
		filled = append(filled, fmt.Sprintf("%s (%d MiB)", filepath.Base(dir), n>>20))
	}
	sleep(ctx, d)
	for _, dir := range dirs {
		if err := os.Remove(filepath.Join(dir, chaosFillFile)); err != nil {
			return "", fmt.Errorf("free the volume: %w", err)
		}
	}
	return fmt.Sprintf("filled %s's volume %s for %s", pod.Name, strings.Join(filled, ", "), d.Round(time.Second)), nil
}

// fillDir writes chaosFillFile into dir until the filesystem has no space
// left, and says how much it wrote.
func fillDir(dir string) (int64, error) {
	f, err := os.OpenFile(filepath.Join(dir, chaosFillFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, size := range []int{4 << 20, 64 << 10, 4 << 10} {
		chunk := make([]byte, size)
		for {
			w, err := f.Write(chunk)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, err
			}
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return n, err
	}
	return n, nil
}
