package v1alpha1

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Defaults of a ZookeeperCluster's spec, also written as the CRD's
// +kubebuilder:default markers.
const (
	DefaultReplicas          int32 = 3
	DefaultImage                   = "localhost/zookeeper:3.8.0"
	DefaultHeap                    = "512m"
	DefaultStorageSize             = "1Gi"
	DefaultReclaimPolicy           = commonv1.ReclaimRetain
	DefaultAdminPort         int32 = 8080
	DefaultMaxUnavailable    int32 = 1
	DefaultClientServiceType       = corev1.ServiceTypeClusterIP
)

// OperatorOwnedConfigKeys are the zoo.cfg keys spec.config must not set:
// the operator writes them (or deliberately leaves them to the image), and
// a user's value would break the volumes, the Services, the probes or the
// membership. The CRD's CEL rule on spec.config lists the same keys; a test
// checks that both agree.
var OperatorOwnedConfigKeys = []string{
	"dataDir",                 // the volume at /data
	"dataLogDir",              // elsewhere than /data would be lost on restart
	"clientPort",              // the Services; written in the server lines
	"clientPortAddress",       // idem
	"secureClientPort",        // client TLS: owned by the operator later
	"secureClientPortAddress", // idem
	"sslQuorum",               // quorum TLS: idem
	"dynamicConfigFile",       // zk-run points it at zoo.cfg.dynamic
	"reconfigEnabled",         // membership changes need it
	"standaloneEnabled",       // false, so that 1 -> 3 -> 1 works
	"quorumListenOnAllIPs",    // peers bind before their DNS names resolve
	"peerType",                // every server is a participant
	"4lw.commands.whitelist",  // the probes use srvr and ruok
}

// OperatorOwnedConfigPrefixes are the prefixes of the zoo.cfg keys
// spec.config must not set: membership (server., group., weight.), the
// AdminServer the operator probes (admin.), TLS (ssl.).
var OperatorOwnedConfigPrefixes = []string{"server.", "group.", "weight.", "admin.", "ssl."}

// IsOperatorOwnedConfigKey reports whether key is a zoo.cfg key the operator
// owns, one spec.config must not set.
func IsOperatorOwnedConfigKey(key string) bool {
	if slices.Contains(OperatorOwnedConfigKeys, key) {
		return true
	}
	return slices.ContainsFunc(OperatorOwnedConfigPrefixes, func(p string) bool {
		return strings.HasPrefix(key, p)
	})
}

// JVMMemoryOverhead is the memory, in bytes, that a ZooKeeper server's JVM
// uses beyond its heap, which the defaulted memory request adds to
// spec.heap. -Xmx bounds the heap only: metaspace (the classes of
// ZooKeeper, Netty and the AdminServer's Jetty), the JIT's code cache,
// thread stacks, the garbage collector's own structures and direct
// buffers come on top. A server with a few hundred clients stays within
// 256Mi; a request of the heap alone would let the scheduler pack servers
// onto nodes that cannot hold them.
const JVMMemoryOverhead int64 = 256 << 20

// ParseHeap returns the size in bytes of a JVM heap written as -Xmx takes
// it, and as spec.heap's pattern (^[1-9][0-9]*[kKmMgG]?$) admits: a
// positive number of bytes, or of KiB, MiB or GiB with a k, m or g suffix
// (either case). "512m" is 512Mi, "1g" 1Gi, "1048576k" 1Gi too.
func ParseHeap(heap string) (int64, error) {
	digits, unit := heap, int64(1)
	if n := len(heap); n > 0 {
		switch heap[n-1] {
		case 'k', 'K':
			digits, unit = heap[:n-1], 1<<10
		case 'm', 'M':
			digits, unit = heap[:n-1], 1<<20
		case 'g', 'G':
			digits, unit = heap[:n-1], 1<<30
		}
	}
	// ParseInt alone would take a sign, and leading zeros the JVM reads
	// differently from the schema.
	if digits == "" || digits[0] < '1' || digits[0] > '9' ||
		strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, fmt.Errorf("heap %q is not a number of bytes with an optional k, m or g suffix, such as 512m", heap)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("heap %q is too large", heap)
	}
	return n * unit, nil
}

// HeapMemoryRequest returns the memory request that fits a JVM heap: the
// heap (ParseHeap) plus JVMMemoryOverhead, in binary units ("768Mi" for
// "512m").
func HeapMemoryRequest(heap string) (resource.Quantity, error) {
	n, err := ParseHeap(heap)
	if err != nil {
		return resource.Quantity{}, err
	}
	if n > math.MaxInt64-JVMMemoryOverhead {
		return resource.Quantity{}, fmt.Errorf("heap %q is too large", heap)
	}
	return *resource.NewQuantity(n+JVMMemoryOverhead, resource.BinarySI), nil
}

// Default fills the unset fields of zk's spec with their defaults. It is
// the one defaulting function: the defaulting webhook and the controller
// (in memory, every pass) both call it, so a cluster is the same with or
// without webhooks. It is idempotent and leaves set fields alone.
//
// The scalars get the defaults the CRD's +kubebuilder:default markers also
// apply. On top, what a schema cannot derive: an unset
// spec.resources.requests.memory becomes HeapMemoryRequest(spec.heap), so
// that the scheduler places a server where its JVM fits. It stays unset
// when spec.resources.limits.memory is set (Kubernetes then requests the
// limit, and a derived request above a limit would make the pods invalid)
// or when the heap does not parse (validation reports that).
func Default(zk *ZookeeperCluster) {
	s := &zk.Spec
	if s.Replicas == 0 {
		s.Replicas = DefaultReplicas
	}
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.Heap == "" {
		s.Heap = DefaultHeap
	}
	if s.Storage.Size == nil {
		s.Storage.Size = ptr.To(resource.MustParse(DefaultStorageSize))
	}
	if s.Storage.ReclaimPolicy == "" {
		s.Storage.ReclaimPolicy = DefaultReclaimPolicy
	}
	if s.ClientService.Type == "" {
		s.ClientService.Type = DefaultClientServiceType
	}
	if s.AdminPort == 0 {
		s.AdminPort = DefaultAdminPort
	}
	if s.MaxUnavailable == nil {
		s.MaxUnavailable = ptr.To(DefaultMaxUnavailable)
	}
	defaultMemoryRequest(&s.Resources, s.Heap)
}

// defaultMemoryRequest sets the memory request of r from heap when neither
// a memory request nor a memory limit is set.
func defaultMemoryRequest(r *corev1.ResourceRequirements, heap string) {
	if _, ok := r.Requests[corev1.ResourceMemory]; ok {
		return
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; ok {
		return
	}
	q, err := HeapMemoryRequest(heap)
	if err != nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	r.Requests[corev1.ResourceMemory] = q
}

// DefaultUpdate prepares an update of old to zk for Default: a memory
// request derived from old's heap follows a change of the heap. The
// defaulting webhook writes the derived request into the spec, where it
// looks like one the user set; kept, it would fall behind a larger heap
// and the update would be rejected as a request below the heap. So when
// the heap changes and zk keeps old's request, which is exactly
// HeapMemoryRequest(old's heap), the request is removed and Default
// derives it again. A request the user set to another value, or changes in
// the same update, is left alone. old must be defaulted; the defaulting
// webhook calls DefaultUpdate before Default on every update.
func DefaultUpdate(old, zk *ZookeeperCluster) {
	if old.Spec.Heap == zk.Spec.Heap {
		return
	}
	kept, ok := zk.Spec.Resources.Requests[corev1.ResourceMemory]
	if !ok {
		return
	}
	was, ok := old.Spec.Resources.Requests[corev1.ResourceMemory]
	if !ok || !kept.Equal(was) {
		return
	}
	if derived, err := HeapMemoryRequest(old.Spec.Heap); err != nil || !derived.Equal(was) {
		return
	}
	delete(zk.Spec.Resources.Requests, corev1.ResourceMemory)
}
