package provisioner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func TestProvisionAndDelete(t *testing.T) {
	dir := t.TempDir()
	h := HostPath{Dir: dir}
	retain := corev1.PersistentVolumeReclaimRetain
	tests := []struct {
		name        string
		class       *storagev1.StorageClass
		wantReclaim corev1.PersistentVolumeReclaimPolicy
	}{
		{"class default is Delete", &storagev1.StorageClass{}, corev1.PersistentVolumeReclaimDelete},
		{"class Retain", &storagev1.StorageClass{ReclaimPolicy: &retain}, corev1.PersistentVolumeReclaimRetain},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvName := "pvc-" + string(rune('a'+i))
			claim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}}
			pv, state, err := h.Provision(context.Background(), controller.ProvisionOptions{StorageClass: tt.class, PVName: pvName, PVC: claim})
			if err != nil || state != controller.ProvisioningFinished {
				t.Fatalf("Provision: %v, %v", state, err)
			}
			if got := pv.Spec.PersistentVolumeReclaimPolicy; got != tt.wantReclaim {
				t.Errorf("reclaim policy %s, want %s", got, tt.wantReclaim)
			}
			if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "1Gi" {
				t.Errorf("capacity %s, want 1Gi", got.String())
			}
			path := filepath.Join(dir, pvName)
			if pv.Spec.HostPath.Path != path {
				t.Fatalf("path %s, want %s", pv.Spec.HostPath.Path, path)
			}
			if err := os.WriteFile(filepath.Join(path, "data"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := h.Delete(context.Background(), pv); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("volume directory survived Delete: %v", err)
			}
		})
	}
}

func TestDeleteRefusesForeignPaths(t *testing.T) {
	outside := t.TempDir()
	h := HostPath{Dir: t.TempDir()}
	pv := &corev1.PersistentVolume{}
	pv.Name = "pvc-x"
	pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: outside}
	if err := h.Delete(context.Background(), pv); err == nil {
		t.Fatal("Delete accepted a path the provisioner did not make")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("foreign directory was touched: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := h.volumePath(bad); err == nil {
			t.Errorf("volume name %q accepted", bad)
		}
	}
}
