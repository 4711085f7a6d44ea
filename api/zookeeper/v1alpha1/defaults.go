package v1alpha1

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Defaults of a ZookeeperCluster's spec, also written as the CRD's
// +kubebuilder:default markers.
const (
	DefaultReplicas          int32 = 3
	DefaultImage                   = "localhost/zookeeper:3.8.0"
	DefaultHeap                    = "512m"
	DefaultStorageSize             = "1Gi"
	DefaultReclaimPolicy           = ReclaimRetain
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

// Default fills the unset fields of zk's spec with their defaults, the
// same the CRD applies. It is the one defaulting function: the defaulting
// webhook and the controller (in memory, every pass) both call it. It is
// idempotent and leaves set fields alone.
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
}
