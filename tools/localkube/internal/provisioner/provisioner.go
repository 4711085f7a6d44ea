package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// HostPath provisions volumes as directories under Dir.
type HostPath struct {
	// Dir is the parent directory of every volume.
	Dir string
}

var _ controller.Provisioner = HostPath{}

// Provision makes the volume's directory and returns its PersistentVolume.
// Volumes carry no node affinity: the one real node holds every directory,
// and pods on simulated nodes never mount anything.
func (h HostPath) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	path, err := h.volumePath(opts.PVName)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	// Pods run as arbitrary users; like a freshly formatted disk, a new
	// volume is writable by whoever mounts it.
	if err := os.MkdirAll(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("create volume directory: %w", err)
	}
	switch fs := opts.StorageClass.Parameters[FilesystemParameter]; fs {
	case "":
	case "ext4":
		size := opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
		if err := makeFilesystem(path, size.Value()); err != nil {
			return nil, controller.ProvisioningFinished, err
		}
	default:
		return nil, controller.ProvisioningFinished, fmt.Errorf("StorageClass %s: parameter %s is %q, want ext4 or nothing", opts.StorageClass.Name, FilesystemParameter, fs)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			MountOptions:                  opts.StorageClass.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptrTo(corev1.HostPathDirectory)},
			},
		},
	}
	if opts.PVC.Spec.VolumeMode != nil {
		pv.Spec.VolumeMode = opts.PVC.Spec.VolumeMode
	}
	return pv, controller.ProvisioningFinished, nil
}

// Delete removes the volume's directory and everything in it.
func (h HostPath) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return errors.New("not a hostPath volume")
	}
	path, err := h.volumePath(pv.Name)
	if err != nil {
		return err
	}
	if pv.Spec.HostPath.Path != path {
		// Never delete a directory this provisioner did not make.
		return &controller.IgnoredError{Reason: fmt.Sprintf("path %s is not under %s", pv.Spec.HostPath.Path, h.Dir)}
	}
	if err := removeFilesystem(path); err != nil {
		return err
	}
	return os.RemoveAll(path)
}

func (h HostPath) volumePath(pvName string) (string, error) {
	if pvName == "" || strings.ContainsAny(pvName, `/\`) || pvName == "." || pvName == ".." {
		return "", fmt.Errorf("invalid volume name %q", pvName)
	}
	return filepath.Join(h.Dir, pvName), nil
}

// Run serves claims of provisionerName until ctx ends, and expands their
// volumes when a claim asks for more (Resize, every 2 s).
func Run(ctx context.Context, client kubernetes.Interface, provisionerName, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pc := controller.NewProvisionController(ctx, client, provisionerName, HostPath{Dir: dir},
		controller.LeaderElection(false))
	go resizeLoop(ctx, client, provisionerName, 2*time.Second)
	pc.Run(ctx)
	return nil
}

func ptrTo[T any](v T) *T { return &v }
