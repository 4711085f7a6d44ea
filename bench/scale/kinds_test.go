//go:build bench

package scale

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// kind is what the scale benchmark needs to know of one kind of cluster;
// everything else (creating, watching, deleting, the figures) is the same
// for every kind. A system adds its entry to kinds.
type kind struct {
	// name names the sub-benchmark (BenchmarkScale/ZooKeeper).
	name string
	// short prefixes the clusters' names (zk-0, zk-1, ...).
	short string
	// queue is the name of the kind's controller, the name label of
	// controller-runtime's workqueue_* metrics.
	queue string
	// statefulSets is how many StatefulSets, controlled by the cluster
	// object, one cluster has once it is created; the cluster counts as
	// ready when all of them have every replica ready.
	statefulSets int
	// pods is how many pods one cluster runs, to check the simulated
	// nodes can take them before starting.
	pods int
	// addToScheme registers the kind's API.
	addToScheme func(*runtime.Scheme) error
	// newObject returns one cluster named name in ns, small, whose volumes
	// go when it does, and whose pods run on simulated (kwok) nodes only:
	// see onSimulatedNodes.
	newObject func(ns, name string) client.Object
}

// kinds are the kinds BenchmarkScale runs, one sub-benchmark each.
var kinds = []kind{zookeeper}

// onSimulatedNodes places pods on localkube's kwok nodes: they tolerate
// the nodes' taint and select their label. Such pods become Ready without
// running, and their addresses (10.245.0.0/16) lead nowhere: every
// server is unreachable, as in a network partition.
var onSimulatedNodes = commonv1.PodPlacement{
	NodeSelector: map[string]string{"type": "kwok"},
	Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual,
		Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
}

var zookeeper = kind{
	name: "ZooKeeper", short: "zk", queue: "zookeepercluster", statefulSets: 1, pods: 3,
	addToScheme: zkv1.AddToScheme,
	newObject: func(ns, name string) client.Object {
		return &zkv1.ZookeeperCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: zkv1.ZookeeperClusterSpec{
				Replicas: 3, Heap: "64m", ImagePullPolicy: corev1.PullNever,
				Storage:      commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete},
				PodPlacement: onSimulatedNodes,
			},
		}
	},
}
