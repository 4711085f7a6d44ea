package v1alpha1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

func TestDefault(t *testing.T) {
	memory := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
	full := zkv1.ZookeeperClusterSpec{
		Replicas:       3,
		Image:          zkv1.DefaultImage,
		Heap:           "512m",
		Resources:      corev1.ResourceRequirements{Requests: memory("768Mi")}, // 512Mi of heap and 256Mi beyond
		Storage:        commonv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi")), ReclaimPolicy: commonv1.ReclaimRetain},
		ClientService:  zkv1.ClientServiceSpec{Type: corev1.ServiceTypeClusterIP},
		AdminPort:      8080,
		MaxUnavailable: ptr.To[int32](1),
	}
	custom := zkv1.ZookeeperClusterSpec{
		Replicas:       5,
		Image:          "example/zk:1",
		Heap:           "2g",
		Resources:      corev1.ResourceRequirements{Requests: memory("2Gi")}, // the user's, even if tight
		Storage:        commonv1.StorageSpec{Size: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("fast"), ReclaimPolicy: commonv1.ReclaimDelete},
		ClientService:  zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30181)},
		AdminPort:      9090,
		MaxUnavailable: ptr.To[int32](0), // zero is a value, not unset
		Paused:         true,
	}
	partial := zkv1.ZookeeperClusterSpec{Replicas: 1, Storage: commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete}}
	partialWant := full
	partialWant.Replicas = 1
	partialWant.Storage.ReclaimPolicy = commonv1.ReclaimDelete
	with := func(modify func(s *zkv1.ZookeeperClusterSpec)) zkv1.ZookeeperClusterSpec {
		s := *full.DeepCopy()
		modify(&s)
		return s
	}
	bigHeap := zkv1.ZookeeperClusterSpec{Heap: "1048576k", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}
	limited := zkv1.ZookeeperClusterSpec{Heap: "1g", Resources: corev1.ResourceRequirements{Limits: memory("2Gi")}}
	badHeap := zkv1.ZookeeperClusterSpec{Heap: "99999999999g"}

	for _, tc := range []struct {
		name     string
		in, want zkv1.ZookeeperClusterSpec
	}{
		{"empty", zkv1.ZookeeperClusterSpec{}, full},
		{"all set", custom, custom},
		{"partial", partial, partialWant},
		{"memory request from the heap, other requests kept", bigHeap, with(func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap = "1048576k"
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1280Mi")}
		})},
		// Kubernetes requests the limit; 1280Mi would exceed a smaller one.
		{"no memory request under a memory limit", limited, with(func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap = "1g"
			s.Resources = corev1.ResourceRequirements{Limits: memory("2Gi")}
		})},
		{"no memory request from a heap that does not parse", badHeap, with(func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap = "99999999999g"
			s.Resources = corev1.ResourceRequirements{}
		})},
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

func TestParseHeap(t *testing.T) {
	for _, tc := range []struct {
		heap string
		want int64 // 0: an error
	}{
		{"512m", 512 << 20},
		{"512M", 512 << 20},
		{"1g", 1 << 30},
		{"1G", 1 << 30},
		{"1048576k", 1 << 30},
		{"64K", 64 << 10},
		{"1000000", 1000000},
		{"1", 1},
		{"8589934591g", 8589934591 << 30}, // the largest that fits
		{"8589934592g", 0},
		{"99999999999999999999", 0},
		{"", 0},
		{"m", 0},
		{"0", 0},
		{"0512m", 0},
		{"-1g", 0},
		{"+1g", 0},
		{"1.5g", 0},
		{"1t", 0},
		{"1gb", 0},
		{"1Gi", 0},
		{" 1g", 0},
		{"lots", 0},
	} {
		got, err := zkv1.ParseHeap(tc.heap)
		switch {
		case tc.want == 0 && err == nil:
			t.Errorf("ParseHeap(%q) = %d, want an error", tc.heap, got)
		case tc.want != 0 && (err != nil || got != tc.want):
			t.Errorf("ParseHeap(%q) = %d, %v, want %d", tc.heap, got, err, tc.want)
		}
	}
}

func TestHeapMemoryRequest(t *testing.T) {
	for heap, want := range map[string]string{
		"512m":     "768Mi",
		"1g":       "1280Mi",
		"64m":      "320Mi",
		"1048576k": "1280Mi",
		"1000000":  "269435456", // not a whole number of Ki: plain bytes
	} {
		got, err := zkv1.HeapMemoryRequest(heap)
		if err != nil || got.String() != want {
			t.Errorf("HeapMemoryRequest(%q) = %s, %v, want %s", heap, got.String(), err, want)
		}
	}
	if q, err := zkv1.HeapMemoryRequest("9223372036854775807"); err == nil {
		t.Errorf("HeapMemoryRequest of a heap that overflows with the overhead = %s, want an error", q.String())
	}
}

func TestDefaultUpdate(t *testing.T) {
	spec := func(heap, request string) *zkv1.ZookeeperCluster {
		zk := &zkv1.ZookeeperCluster{Spec: zkv1.ZookeeperClusterSpec{Heap: heap}}
		if request != "" {
			zk.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}
		}
		return zk
	}
	for _, tc := range []struct {
		name        string
		old, update *zkv1.ZookeeperCluster
		want        string // the memory request after DefaultUpdate and Default
	}{
		{"a derived request follows the heap", spec("512m", "768Mi"), spec("1g", "768Mi"), "1280Mi"},
		{"equal in other units is still derived", spec("512m", "768Mi"), spec("1g", "786432Ki"), "1280Mi"},
		{"a request the user set stays", spec("512m", "2Gi"), spec("1g", "2Gi"), "2Gi"},
		{"a request changed in the same update stays", spec("512m", "768Mi"), spec("1g", "1500Mi"), "1500Mi"},
		{"a request removed in the update is derived", spec("512m", "768Mi"), spec("1g", ""), "1280Mi"},
		{"the same heap keeps the request", spec("1g", "768Mi"), spec("1g", "768Mi"), "768Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zkv1.DefaultUpdate(tc.old, tc.update)
			zkv1.Default(tc.update)
			if got := tc.update.Spec.Resources.Requests.Memory(); got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("memory request %s, want %s", got, tc.want)
			}
		})
	}
}
