package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestResize: a bound claim of this provisioner asking for more than its
// capacity gets it, on its volume and in its status, its resize
// conditions cleared; a claim of another provisioner's volume, a claim at
// its capacity and an unbound claim are left alone.
func TestResize(t *testing.T) {
	volume := func(name, by, size string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedBy: by}},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/v/" + name}}},
		}
	}
	claim := func(name, volume, request, capacity string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)},
				Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}}},
		}
	}
	client := fake.NewClientset(
		volume("pv-grow", "localkube", "1Gi"), claim("grow", "pv-grow", "2Gi", "1Gi", corev1.ClaimBound),
		volume("pv-other", "someone-else", "1Gi"), claim("other", "pv-other", "2Gi", "1Gi", corev1.ClaimBound),
		volume("pv-same", "localkube", "1Gi"), claim("same", "pv-same", "1Gi", "1Gi", corev1.ClaimBound),
		claim("pending", "", "2Gi", "0", corev1.ClaimPending),
	)
	ctx := context.Background()
	if err := Resize(ctx, client, "localkube"); err != nil {
		t.Fatal(err)
	}
	capacity := func(name string) (string, string, int) {
		pvc, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		volume := "-"
		if pvc.Spec.VolumeName != "" {
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			volume = pv.Spec.Capacity.Storage().String()
		}
		return pvc.Status.Capacity.Storage().String(), volume, len(pvc.Status.Conditions)
	}
	for name, want := range map[string][3]any{
		"grow": {"2Gi", "2Gi", 0}, "other": {"1Gi", "1Gi", 1}, "same": {"1Gi", "1Gi", 1}, "pending": {"0", "-", 1},
	} {
		c, v, conds := capacity(name)
		if c != want[0] || v != want[1] || conds != want[2] {
			t.Errorf("claim %s: capacity %s, volume %s, %d conditions; want %v", name, c, v, conds, want)
		}
	}
}
