package v1alpha1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

func TestDefault(t *testing.T) {
	full := zkv1.ZookeeperClusterSpec{
		Replicas:       3,
		Image:          zkv1.DefaultImage,
		Heap:           "512m",
		Storage:        zkv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi")), ReclaimPolicy: zkv1.ReclaimRetain},
		ClientService:  zkv1.ClientServiceSpec{Type: corev1.ServiceTypeClusterIP},
		AdminPort:      8080,
		MaxUnavailable: ptr.To[int32](1),
	}
	custom := zkv1.ZookeeperClusterSpec{
		Replicas:       5,
		Image:          "example/zk:1",
		Heap:           "2g",
		Storage:        zkv1.StorageSpec{Size: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("fast"), ReclaimPolicy: zkv1.ReclaimDelete},
		ClientService:  zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30181)},
		AdminPort:      9090,
		MaxUnavailable: ptr.To[int32](0), // zero is a value, not unset
		Paused:         true,
	}
	partial := zkv1.ZookeeperClusterSpec{Replicas: 1, Storage: zkv1.StorageSpec{ReclaimPolicy: zkv1.ReclaimDelete}}
	partialWant := full
	partialWant.Replicas = 1
	partialWant.Storage.ReclaimPolicy = zkv1.ReclaimDelete

	for _, tc := range []struct {
		name     string
		in, want zkv1.ZookeeperClusterSpec
	}{
		{"empty", zkv1.ZookeeperClusterSpec{}, full},
		{"all set", custom, custom},
		{"partial", partial, partialWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := &zkv1.ZookeeperCluster{Spec: *tc.in.DeepCopy()}
			zkv1.Default(zk)
			if !equality.Semantic.DeepEqual(zk.Spec, tc.want) {
				t.Errorf("Default:\n got %+v\nwant %+v", zk.Spec, tc.want)
			}
			once := zk.DeepCopy()
			zkv1.Default(zk)
			if !equality.Semantic.DeepEqual(zk.Spec, once.Spec) {
				t.Errorf("Default is not idempotent: %+v then %+v", once.Spec, zk.Spec)
			}
		})
	}
}
