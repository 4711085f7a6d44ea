package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Server roles, the keys of status.servers: a server's
// server_stats.server_state from the AdminServer's stat command, or
// RoleUnknown for a server that did not answer or does not serve.
const (
	RoleLeader     = "leader"
	RoleFollower   = "follower"
	RoleObserver   = "observer"
	RoleStandalone = "standalone"
	RoleUnknown    = "unknown"
)

// ZookeeperClusterSpec is the desired state of a ZooKeeper ensemble.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || self.maxUnavailable <= 1 || self.maxUnavailable <= (self.replicas - 1) / 2",message="maxUnavailable must not exceed (replicas-1)/2, the members an ensemble can lose and keep its quorum (1 is always allowed)",fieldPath=.maxUnavailable
type ZookeeperClusterSpec struct {
	// replicas is the number of ZooKeeper servers, all voting members
	// (participants). Default 3; 1 to 15; can change: the controller adds
	// members after their pods serve and removes members from the ensemble
	// before their pods go, never below a healthy quorum. A quorum is a
	// majority, replicas/2+1: an even count tolerates no more failures than
	// the odd count below it (4 servers survive 1 failure, like 3), so odd
	// counts are recommended; even ones are allowed as steps of a scaling.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=15
	Replicas int32 `json:"replicas,omitempty"`

	// image is the ZooKeeper container image; it must implement the
	// contract of Steward's image (images/zookeeper/README.md).
	// Default "localhost/zookeeper:3.8.0"; can change (the controller
	// restarts the servers one at a time, followers first, the leader last).
	// +optional
	// +kubebuilder:default="localhost/zookeeper:3.8.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imagePullPolicy is the servers' image pull policy. Default: unset,
	// Kubernetes' default (IfNotPresent, Always for a :latest tag); can
	// change.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// resources are the ZooKeeper container's requests and limits. Default:
	// none; can change (restarts the servers). Keep the memory limit above
	// heap: the JVM needs room beyond its heap.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// heap is the JVM's maximum heap (-Xmx, the image's ZK_HEAP): a number
	// with an optional k, m or g suffix. Default "512m"; can change
	// (restarts the servers).
	// +optional
	// +kubebuilder:default="512m"
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*[kKmMgG]?$`
	// +kubebuilder:validation:MaxLength=16
	Heap string `json:"heap,omitempty"`

	// storage is the persistent volume of each server, mounted at /data.
	// Default: 1Gi of the cluster's default storage class, retained; can
	// change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`

	// config holds zoo.cfg keys and values the operator does not own, for
	// example tickTime, initLimit, syncLimit, maxClientCnxns,
	// autopurge.snapRetainCount or metricsProvider.className. The operator
	// writes tickTime=2000, initLimit=10, syncLimit=5 and
	// connectToLearnerMasterLimit=2 unless set here.
	// Keys it owns are rejected: dataDir, dataLogDir, clientPort,
	// clientPortAddress, secureClientPort, secureClientPortAddress,
	// sslQuorum, dynamicConfigFile, reconfigEnabled, standaloneEnabled,
	// quorumListenOnAllIPs, peerType, 4lw.commands.whitelist, and any key
	// starting with server., group., weight., admin. or ssl. (membership,
	// the AdminServer the operator probes, and TLS, which the operator will
	// own). Keys are property names (letters, digits, '.', '_', '-'); values
	// are written escaped (Java properties), so ZooKeeper reads them as
	// given, newlines included. At most 64 keys.
	// Default: empty; can change (restarts the servers).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !(k in ['dataDir', 'dataLogDir', 'clientPort', 'clientPortAddress', 'secureClientPort', 'secureClientPortAddress', 'sslQuorum', 'dynamicConfigFile', 'reconfigEnabled', 'standaloneEnabled', 'quorumListenOnAllIPs', 'peerType', '4lw.commands.whitelist']) && !['server.', 'group.', 'weight.', 'admin.', 'ssl.'].exists(p, k.startsWith(p)))`,message="keys owned by the operator are not allowed: dataDir, dataLogDir, clientPort, clientPortAddress, secureClientPort, secureClientPortAddress, sslQuorum, dynamicConfigFile, reconfigEnabled, standaloneEnabled, quorumListenOnAllIPs, peerType, 4lw.commands.whitelist, and keys starting with server., group., weight., admin. or ssl."
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.size() <= 128 && k.matches('^[A-Za-z0-9][A-Za-z0-9._-]*$'))`,message="keys must be property names of at most 128 characters: letters, digits, '.', '_' and '-'"
	Config map[string]string `json:"config,omitempty"`

	// clientService is the Service clients connect to (port 2181). Default:
	// a ClusterIP Service; can change.
	// +optional
	// +kubebuilder:default={}
	ClientService ClientServiceSpec `json:"clientService,omitempty"`

	// adminPort is the AdminServer's port (admin.serverPort), which the
	// operator probes. Default 8080; 1 to 65535 but not 2181, 2888 or 3888;
	// can change (restarts the servers).
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="!(self in [2181, 2888, 3888])",message="adminPort must differ from the client (2181), quorum (2888) and election (3888) ports"
	AdminPort int32 `json:"adminPort,omitempty"`

	// maxUnavailable is the PodDisruptionBudget's maxUnavailable: how many
	// servers voluntary disruptions (node drains) may take down at once.
	// Default 1; can change. It must not exceed (replicas-1)/2, the number
	// of members an ensemble can lose and keep its quorum; 1 is always
	// allowed, so that the nodes of a 1- or 2-server ensemble (which has no
	// fault tolerance) can still be drained. 0 blocks voluntary
	// disruptions, the operator's rolling restarts included (it evicts
	// the servers it restarts, through this budget).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// networkPolicy fences the servers with a NetworkPolicy: the client
	// port (2181) from networkPolicy.clientsFrom (default: any source),
	// the quorum and election ports (2888, 3888) from the servers, the
	// AdminServer (adminPort) from Steward's operator. Default: no
	// policy; can change (docs/zookeeper.md).
	// +optional
	NetworkPolicy commonv1.NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// The servers' placement: nodeSelector, affinity (replacing the
	// default, a preferred pod anti-affinity that spreads the servers over
	// nodes), tolerations, topologySpreadConstraints and priorityClassName.
	// Default: none but that spreading; can change (restarts the servers).
	commonv1.PodPlacement `json:",inline"`

	// paused stops the controller from acting on the cluster (its pods keep
	// running). Default false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ClientServiceSpec is the Service clients connect to.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type == 'NodePort' || self.type == 'LoadBalancer'",message="nodePort requires type NodePort or LoadBalancer",fieldPath=.nodePort
type ClientServiceSpec struct {
	// type is the Service type: ClusterIP, NodePort or LoadBalancer.
	// Default ClusterIP; can change.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`

	// nodePort is the node port of the client port; only with type NodePort
	// or LoadBalancer. Default: allocated by Kubernetes; can change.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort *int32 `json:"nodePort,omitempty"`

	// annotations are added to the Service, for example a cloud load
	// balancer's settings. Default: none; can change.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ZookeeperClusterStatus is the observed state of a ZooKeeper ensemble.
type ZookeeperClusterStatus struct {
	// conditions (Ready, Available, Progressing, Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation, the running or last task flow
	// (scaling, rolling restart).
	commonv1.StatusCore `json:",inline"`

	// readyReplicas is the number of servers whose pods are ready (serving).
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// servers are the servers by role (leader, follower, observer,
	// standalone, or unknown for those that did not answer), from each
	// pod's AdminServer.
	// +optional
	Servers map[string][]ServerStatus `json:"servers,omitempty"` //nolint:kubeapilinter // nomaps: a served status field read by users and tools as servers.leader; a list would change its shape

	// leader is the name of the leader's pod; empty without a leader.
	// +optional
	Leader string `json:"leader,omitempty"`

	// members are the server ids of the committed ensemble membership (the
	// dynamic configuration), in increasing order. Server N runs in pod
	// <name>-<N-1>.
	// +optional
	// +listType=set
	Members []int32 `json:"members,omitempty"`

	// clientEndpoint is the host:port clients connect to, the client
	// Service's cluster DNS name and port.
	// +optional
	ClientEndpoint string `json:"clientEndpoint,omitempty"`

	// currentImage is the image every server runs; during an image change
	// it stays the old one until all servers run the new one.
	// +optional
	CurrentImage string `json:"currentImage,omitempty"`

	// configRevision is the name of the content-addressed config ConfigMap
	// (zoo.cfg and zoo.cfg.dynamic) of the latest revision.
	// +optional
	ConfigRevision string `json:"configRevision,omitempty"`
}

// ServerStatus is one server as its AdminServer reports it.
type ServerStatus struct {
	// name is the server's pod.
	// +required
	Name string `json:"name"`
	// id is the server's id (its myid: pod ordinal + 1).
	// +optional
	ID int32 `json:"id,omitempty"`
	// address is the pod's IP.
	// +optional
	Address string `json:"address,omitempty"`
	// lastZxid is the last transaction the server processed, hexadecimal
	// (0x...).
	// +optional
	LastZxid string `json:"lastZxid,omitempty"`
	// error says why the server did not answer or does not serve: a
	// timeout, a refused connection, an unreachable address, or what the
	// server answered. It keeps its text while the failure lasts.
	// +optional
	Error string `json:"error,omitempty"`
}

// ZookeeperCluster is a ZooKeeper ensemble.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=zk,categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 52 characters: it names the Services and the StatefulSet's pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ZookeeperCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired ensemble; every field has a default.
	// +optional
	// +kubebuilder:default={}
	Spec ZookeeperClusterSpec `json:"spec,omitempty"`
	// status is the observed ensemble.
	// +optional
	Status ZookeeperClusterStatus `json:"status,omitempty"`
}

// ZookeeperClusterList is a list of ZookeeperClusters.
//
// +kubebuilder:object:root=true
type ZookeeperClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ZookeeperCluster `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (z *ZookeeperCluster) StatusCore() *commonv1.StatusCore { return &z.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (z *ZookeeperCluster) IsPaused() bool { return z.Spec.Paused }
