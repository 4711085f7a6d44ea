package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// MatrixOneClusterSpec is a whole MatrixOne cluster: a log service, a TN,
// groups of CNs and a proxy, made as a LogSet, a TNSet, CNSets and a
// ProxySet that the cluster owns. A change reaches the sets one at a
// time, in the order log service, CN groups (their CNs drain before they
// restart), TN, proxy: each when the sets before it are Ready.
//
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom)",message="restoreFrom is set only at creation: a restore never writes into a cluster that holds data",fieldPath=.restoreFrom
type MatrixOneClusterSpec struct {
	// image is every role's MatrixOne image (images/matrixone). Default
	// "localhost/matrixone:1.2.4"; can change (rolls out in order).
	// +optional
	// +kubebuilder:default="localhost/matrixone:1.2.4"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imagePullPolicy is every pod's image pull policy. Default: unset
	// (Kubernetes' default); can change.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// sharedStorage is the cluster's shared storage (table data); see
	// LogSet. Required; immutable.
	// +required
	SharedStorage SharedStorage `json:"sharedStorage"`

	// rootPassword names the Secret of root's password (key "password"),
	// generated when absent; see LogSet. Default "<name>-log-root";
	// immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="rootPassword is immutable: MatrixOne read it at its bootstrap"
	RootPassword string `json:"rootPassword,omitempty"`

	// restoreFrom makes the cluster a restore of a Backup (see LogSet):
	// the LogSet copies the backup's data before its first start, then the
	// cluster forces a global checkpoint and restarts its TN once, and
	// only then creates its proxies: no client reaches it before. Its
	// sharedStorage must be S3 (or a BucketClaim) at the Backup's
	// endpoint, holding nothing, and rootPassword must name a Secret
	// holding the source cluster's root password. Default: none;
	// immutable, and only set at creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restoreFrom is immutable: the restore happens at the first start"
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`

	// logService is the log service (LogSet "<name>-log"). Default: the
	// LogSet's defaults; can change as its fields say.
	// +optional
	// +kubebuilder:default={}
	LogService LogServiceSpec `json:"logService,omitempty"`

	// tn is the transaction node (TNSet "<name>-tn"). Default: the
	// TNSet's defaults; can change as its fields say.
	// +optional
	// +kubebuilder:default={}
	TN TNSpec `json:"tn,omitempty"`

	// cnGroups are the groups of CNs (a CNSet "<name>-<group>" each),
	// rolled out in their order here. Required, at least one; can change:
	// a group added is created, a group removed is scaled to zero (its
	// CNs drain) and then deleted.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	CNGroups []CNGroupSpec `json:"cnGroups"`

	// proxy is the proxies (ProxySet "<name>-proxy") clients connect to;
	// status.sqlAddress is theirs. Default: the ProxySet's defaults; can
	// change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Proxy ProxySpec `json:"proxy,omitempty"`

	// monitoring makes a PodMonitor over every role's metrics port (see
	// docs/matrixone.md, "Metrics"). Default: none; can change.
	// +optional
	Monitoring commonv1.MonitoringSpec `json:"monitoring,omitempty"`

	// paused stops the controller from acting on the cluster (the sets
	// keep running as they are). Default false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// LogServiceSpec is a MatrixOneCluster's log service; the fields are the
// LogSet's.
//
// +kubebuilder:validation:XValidation:rule="!has(self.shardReplicas) || !has(self.replicas) || self.shardReplicas <= self.replicas",message="logService.replicas must not be below logService.shardReplicas: each replica of a shard lives on its own store",fieldPath=.replicas
type LogServiceSpec struct {
	// replicas is the number of log stores. Default 3; can change, never
	// below shardReplicas: stores are added and removed as the LogSet's
	// replicas says.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	Replicas int32 `json:"replicas,omitempty"`

	// shardReplicas is the number of replicas of each log shard. Default:
	// replicas, at most 3, recorded at creation; immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logService.shardReplicas is immutable"
	ShardReplicas int32 `json:"shardReplicas,omitempty"`

	// logShards is the number of log shards. Default 1; immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logService.logShards is immutable"
	LogShards int32 `json:"logShards,omitempty"`

	// storeFailureTimeout is how long a log store is down before it is
	// replaced (see LogSet). Default 10m; "0s" never replaces; can change.
	// +optional
	StoreFailureTimeout *metav1.Duration `json:"storeFailureTimeout,omitempty"`

	// The log stores' resources, configuration and placement.
	RoleSpec `json:",inline"`

	// storage is each log store's volume. Default: 1Gi, retained; can
	// change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// TNSpec is a MatrixOneCluster's TN.
type TNSpec struct {
	// The TN's resources, configuration and placement.
	RoleSpec `json:",inline"`

	// storage is the TN's volume. Default: 1Gi, retained; can change as
	// its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// CNGroupSpec is a group of CNs of a MatrixOneCluster.
type CNGroupSpec struct {
	// name names the group: its CNSet is "<cluster>-<name>". Required; a
	// DNS label. A group renamed is another group: the old one is removed
	// and the new one added: a name cannot change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// replicas is the number of CNs. Default 1; 0 to 64; can change
	// (leaving CNs drain first). With replicasFrom CNSet, only the number
	// the CNSet is created with.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Replicas *int32 `json:"replicas,omitempty"`
	// replicasFrom says who decides the group's number of CNs: Cluster,
	// the group's replicas, which the cluster keeps its CNSet at; or
	// CNSet, the CNSet's own spec.replicas, which a HorizontalPodAutoscaler
	// (or kubectl scale) sets through the CNSet's scale subresource, and
	// which the cluster then never changes. Default Cluster; can change
	// (either way, the CNSet keeps the count it has until the new owner
	// changes it).
	// +optional
	// +kubebuilder:validation:Enum=Cluster;CNSet
	ReplicasFrom ReplicasFrom `json:"replicasFrom,omitempty"`

	// drainTimeout bounds a CN's drain (see CNSet). Default 5m; can change.
	// +optional
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`

	// labels are the group's CN labels (see CNSet), e.g. [{key: account,
	// values: [acc1]}] for a group that serves the account acc1 alone.
	// Default none; can change (no CN restarts).
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=8
	Labels []CNLabel `json:"labels,omitempty"`

	// The CNs' resources, configuration and placement.
	RoleSpec `json:",inline"`

	// storage is each CN's volume. Default: 1Gi, retained; can change as
	// its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// ReplicasFrom says who decides a CN group's number of CNs.
type ReplicasFrom string

const (
	// ReplicasFromCluster is the group's replicas.
	ReplicasFromCluster ReplicasFrom = "Cluster"
	// ReplicasFromCNSet is the CNSet's own spec.replicas (an autoscaler's).
	ReplicasFromCNSet ReplicasFrom = "CNSet"
)

// ProxySpec is a MatrixOneCluster's proxies.
type ProxySpec struct {
	// replicas is the number of proxies. Default 1; 1 to 16; can change.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Replicas int32 `json:"replicas,omitempty"`

	// The proxies' resources, configuration and placement.
	RoleSpec `json:",inline"`

	// serviceType is the SQL Service's type. Default ClusterIP; can change.
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
}

// SetStatus is one set of a MatrixOneCluster as the cluster saw it.
type SetStatus struct {
	// kind is the set's kind (LogSet, TNSet, CNSet, ProxySet).
	// +required
	Kind string `json:"kind"`
	// name is the set's name.
	// +required
	Name string `json:"name"`
	// ready is the set's Ready condition at its generation.
	// +required
	Ready bool `json:"ready"`
	// reason is the set's Ready reason when it is not ready, or why the
	// cluster has not passed the set its change yet.
	// +optional
	Reason string `json:"reason,omitempty"`
	// image is the set's spec.image: the cluster's spec.image once the
	// cluster has passed the set its change, the one before until then.
	// The upgrade rules read it (a rollback is refused once a CN group
	// has been given the newer version).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
}

// MatrixOneClusterStatus is the observed state of a MatrixOneCluster.
type MatrixOneClusterStatus struct {
	// conditions (Ready, Progressing, Synced, and the framework's),
	// observedGeneration, and operation.
	commonv1.StatusCore `json:",inline"`

	// sets are the cluster's sets in rollout order.
	// +optional
	// +listType=atomic
	Sets []SetStatus `json:"sets,omitempty"`

	// sqlAddress is where clients connect: the proxies' Service.
	// +optional
	SQLAddress string `json:"sqlAddress,omitempty"`

	// rootPasswordSecret names the Secret of root's password.
	// +optional
	RootPasswordSecret string `json:"rootPasswordSecret,omitempty"`

	// restore is the progress of the restore spec.restoreFrom asks for:
	// the LogSet's, then the cluster's own steps.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`
}

// MatrixOneCluster is a whole MatrixOne cluster made of the sets it owns.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mo,categories={steward,matrixone}
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,priority=1
// +kubebuilder:printcolumn:name="SQL",type=string,JSONPath=`.status.sqlAddress`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MatrixOneCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster; sharedStorage and cnGroups are required.
	// +required
	Spec MatrixOneClusterSpec `json:"spec"`
	// status is the observed cluster.
	// +optional
	Status MatrixOneClusterStatus `json:"status,omitempty"`
}

// MatrixOneClusterList is a list of MatrixOneClusters.
//
// +kubebuilder:object:root=true
type MatrixOneClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MatrixOneCluster `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (c *MatrixOneCluster) StatusCore() *commonv1.StatusCore { return &c.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (c *MatrixOneCluster) IsPaused() bool { return c.Spec.Paused }
