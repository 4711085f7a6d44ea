package zookeeper_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// TestVolumesGrow grows a cluster's storage against a real API server
// (the framework's volume growth, as the ZooKeeper controller runs it):
// every bound claim of the servers, a departed member's included, is
// asked for the larger size (the API server's own resize checks pass:
// the StorageClass allows expansion); the StatefulSet is deleted with its
// pods orphaned, and once the garbage collector (played here) lets it go,
// it comes back with the larger claim template; an Event says so. A
// smaller size, with no webhook to refuse it, is reported as an invalid
// spec and changes nothing.
func TestVolumesGrow(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-expands"}, Provisioner: "example.com/p", AllowVolumeExpansion: ptr.To(true)}
	create(t, c, class)
	t.Cleanup(func() { _ = c.Delete(context.Background(), class) })

	create(t, c, newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.Storage.StorageClassName = &class.Name }))
	zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	before := &appsv1.StatefulSet{}
	mustGet(t, c, ns, "zk", before)

	// The claims the StatefulSet made, bound, and a departed member's.
	claims := []string{"data-zk-0", "data-zk-1", "data-zk-2", "data-zk-4"}
	for _, name := range claims {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class.Name, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/v/" + name}},
		}}
		create(t, c, pv)
		t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
		pvc := claim(ns, name, build.Selector(zk, build.ComponentServer))
		pvc.Spec.StorageClassName, pvc.Spec.VolumeName = &class.Name, pv.Name
		create(t, c, pvc)
		pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
		if err := c.Status().Update(t.Context(), pvc); err != nil {
			t.Fatal(err)
		}
	}

	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi")) })
	testenv.Eventually(t, "every claim asked for 2Gi", func() (bool, string) {
		for _, name := range claims {
			pvc := &corev1.PersistentVolumeClaim{}
			mustGet(t, c, ns, name, pvc)
			if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
				return false, fmt.Sprintf("claim %s asks for %s", name, got.String())
			}
		}
		return true, ""
	})
	// The API server marks the StatefulSet for orphaning; its garbage
	// collector, which envtest does not run, would then let it go.
	testenv.Eventually(t, "the StatefulSet deleted, its pods orphaned", func() (bool, string) {
		sts := &appsv1.StatefulSet{}
		if !get(t, c, ns, "zk", sts) || sts.UID != before.UID {
			return false, "the old StatefulSet is gone before the garbage collector let it go"
		}
		return sts.DeletionTimestamp != nil && len(sts.Finalizers) == 1 && sts.Finalizers[0] == metav1.FinalizerOrphanDependents,
			fmt.Sprintf("deletion %v, finalizers %v", sts.DeletionTimestamp, sts.Finalizers)
	})
	testenv.Update(t, c, before, func(sts *appsv1.StatefulSet) { sts.Finalizers = nil })
	after := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the StatefulSet back with 2Gi claims", func() (bool, string) {
		if !get(t, c, ns, "zk", after) {
			return false, "no StatefulSet"
		}
		size := after.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
		return after.UID != before.UID && size.String() == "2Gi", fmt.Sprintf("UID %s, claim template %s", after.UID, size.String())
	})
	if after.Spec.Template.Annotations[build.ConfigRevisionAnnotation] != before.Spec.Template.Annotations[build.ConfigRevisionAnnotation] {
		t.Errorf("the pod template changed with the volumes: pods would restart")
	}
	testenv.Eventually(t, "an Event VolumesGrowing", func() (bool, string) {
		var events eventsv1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == framework.ReasonVolumesGrowing && strings.Contains(e.Note, "data-zk-4") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Events, none VolumesGrowing naming data-zk-4", len(events.Items))
	})

	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi")) })
	waitCluster(t, c, ns, "zk", "a shrink reported as an invalid spec", func(zk *zkv1.ZookeeperCluster) bool {
		s := condition(zk, framework.ConditionSynced)
		return zk.Status.ObservedGeneration == zk.Generation && s.Reason == framework.ReasonInvalidSpec &&
			strings.Contains(s.Message, "asks for 1Gi, less than its volumes' 2Gi")
	})
	kept := &appsv1.StatefulSet{}
	mustGet(t, c, ns, "zk", kept)
	if kept.UID != after.UID || kept.DeletionTimestamp != nil {
		t.Errorf("a shrink touched the StatefulSet")
	}
}
