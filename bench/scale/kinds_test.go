//go:build bench

package scale

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
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
	// controllers are the kind's controllers, by the name of their
	// workqueue (controller-runtime's workqueue_* metrics) and the kind
	// they reconcile (Steward's steward_* metrics): the cluster's own
	// first.
	controllers []controller
	// statefulSets is how many StatefulSets one cluster has once it is
	// created while none of its servers ever answers; the cluster counts
	// as ready when all of them have every replica ready.
	statefulSets int
	// pods is how many pods one cluster runs then, to check the simulated
	// nodes can take them before starting.
	pods int
	// addToScheme registers the kind's API.
	addToScheme func(*runtime.Scheme) error
	// newObject returns one cluster named name in ns, small, whose volumes
	// go when it does, and whose pods run on simulated (kwok) nodes only:
	// see onSimulatedNodes.
	newObject func(ns, name string) client.Object
	// parts are the kinds of the objects the operator makes a cluster of
	// besides Kubernetes' own (MatrixOne's sets, OceanBase's views): the
	// tracker watches them and counts their changes as the cluster's.
	parts []client.Object
	// partSuffixes maps the Kind of a part that controls StatefulSets to
	// the suffix its name adds to its cluster's ("LogSet": "-log").
	partSuffixes map[string]string
	// budget is the most API requests the operator may make per created
	// cluster while none of its servers answers: docs/scale.md ("Request
	// budgets") says what each is for. The run prints its figure against
	// it (a mixed run, against the mean of its kinds').
	budget float64
}

// controller is one controller of a kind.
type controller struct {
	// queue is the controller's name, the name label of its workqueue
	// metrics; kind is the Kind it reconciles, the kind label of
	// Steward's own.
	queue, kind string
}

// clusterOf returns the cluster a StatefulSet's controller reference
// leads to: the reference's name when the cluster controls it, or the
// name of the part that does less its suffix.
func (k kind) clusterOf(ref *metav1.OwnerReference) string {
	if ref.Kind == k.controllers[0].kind {
		return ref.Name
	}
	if suffix, ok := k.partSuffixes[ref.Kind]; ok {
		if name, ok := strings.CutSuffix(ref.Name, suffix); ok {
			return name
		}
	}
	return ""
}

// kinds are the kinds BenchmarkScale runs, one sub-benchmark each, and
// together in BenchmarkScale/Mixed.
var kinds = []kind{zookeeper, matrixone, oceanbase, gpss}

// onSimulatedNodes places pods on localkube's kwok nodes: they tolerate
// the nodes' taint and select their label. Such pods become Ready without
// running, and their addresses (10.245.0.0/16) lead nowhere: every
// server is unreachable, as in a network partition.
var onSimulatedNodes = commonv1.PodPlacement{
	NodeSelector: map[string]string{"type": "kwok"},
	Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual,
		Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
}

// unroutable is an address of TEST-NET-1 (RFC 5737): what a cluster's
// external endpoints (MatrixOne's S3, GPSS's etcd) point at, never
// contacted while no server answers.
const unroutable = "192.0.2.1"

var zookeeper = kind{
	name: "ZooKeeper", short: "zk", controllers: []controller{{"zookeepercluster", "ZookeeperCluster"}},
	statefulSets: 1, pods: 3,
	budget:      22,
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

// matrixone is a cluster of three log stores, a TN, a proxy and a group
// of one CN. While no server answers, the log, TN and proxy StatefulSets
// exist (5 pods); the CNs wait for HAKeeper to hear from the TN, and
// never come. Its shared storage is S3 at an address never contacted
// (only a restore reads it), so that it has no shared claim.
var matrixone = kind{
	name: "MatrixOne", short: "mo",
	controllers: []controller{{"matrixonecluster", "MatrixOneCluster"}, {"logset", "LogSet"},
		{"tnset", "TNSet"}, {"cnset", "CNSet"}, {"proxyset", "ProxySet"}},
	statefulSets: 3, pods: 5,
	addToScheme:  mov1.AddToScheme,
	budget:       110,
	parts:        []client.Object{&mov1.LogSet{}, &mov1.TNSet{}, &mov1.CNSet{}, &mov1.ProxySet{}},
	partSuffixes: map[string]string{"LogSet": "-log", "TNSet": "-tn", "CNSet": "-cn", "ProxySet": "-proxy"},
	newObject: func(ns, name string) client.Object {
		role := mov1.RoleSpec{PodPlacement: onSimulatedNodes}
		storage := commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete}
		return &mov1.MatrixOneCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: mov1.MatrixOneClusterSpec{
				Image: mov1.DefaultImage, ImagePullPolicy: corev1.PullNever,
				SharedStorage: mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "http://" + unroutable + ":9000",
					Bucket: "bench", KeyPrefix: name, Region: "us-east-1", PathStyle: true}},
				LogService: mov1.LogServiceSpec{Replicas: 3, RoleSpec: role, Storage: storage},
				TN:         mov1.TNSpec{RoleSpec: role, Storage: storage},
				CNGroups:   []mov1.CNGroupSpec{{Name: "cn", Replicas: ptr.To[int32](1), RoleSpec: role, Storage: storage}},
				Proxy:      mov1.ProxySpec{Replicas: 1, RoleSpec: role},
			},
		}
	},
}

// oceanbase is a cluster of three zones of one observer each (obsim's
// image; it never runs). While no observer answers, each zone's
// StatefulSet exists and the bootstrap waits.
var oceanbase = kind{
	name: "OceanBase", short: "ob",
	controllers:  []controller{{"obcluster", "OBCluster"}, {"obzone", "OBZone"}, {"observer", "OBServer"}},
	statefulSets: 3, pods: 3,
	budget:      70,
	addToScheme: obv1.AddToScheme,
	parts:       []client.Object{&obv1.OBZone{}, &obv1.OBServer{}},
	newObject: func(ns, name string) client.Object {
		return &obv1.OBCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: obv1.OBClusterSpec{
				Image: "localhost/obsim:1.0", ImagePullPolicy: corev1.PullNever,
				Zones:     []obv1.OBZoneSpec{{Name: "z1", Replicas: 1}, {Name: "z2", Replicas: 1}, {Name: "z3", Replicas: 1}},
				Storage:   commonv1.StorageSpec{Size: ptr.To(resource.MustParse("64Mi")), ReclaimPolicy: commonv1.ReclaimDelete},
				Placement: onSimulatedNodes,
			},
		}
	},
}

// gpss is a cluster of two instances (the simulator's image; it never
// runs) on an external etcd at an address nothing dials: the managed
// etcd's pod takes no placement, so it would run on the real node.
var gpss = kind{
	name: "GPSS", short: "gpss", controllers: []controller{{"gpsscluster", "GpssCluster"}},
	statefulSets: 1, pods: 2,
	budget:      19,
	addToScheme: gpssv1.AddToScheme,
	newObject: func(ns, name string) client.Object {
		return &gpssv1.GpssCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gpssv1.GpssClusterSpec{
				Replicas: 2, Image: "localhost/gpss-simulator:1.0", ImagePullPolicy: corev1.PullNever,
				ClusterID:    name,
				Etcd:         gpssv1.EtcdSpec{Endpoints: []string{"http://" + unroutable + ":2379"}},
				PodPlacement: onSimulatedNodes,
			},
		}
	},
}
