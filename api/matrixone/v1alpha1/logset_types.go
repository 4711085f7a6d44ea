package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// ConditionStoresHealthy says whether every log store is up, and when one
// is not, what happens to it: it is down (StoreDown), replaced once down
// for spec.storeFailureTimeout, or not replaced and why
// (ReplacementBlocked, ReplacementDisabled); or every store is up but a
// shard runs fewer replicas than it should (ReplicasMissing: HAKeeper has
// yet to put them on a store that replaced a failed one).
const ConditionStoresHealthy = "StoresHealthy"

// LogSetSpec is the desired state of a MatrixOne log service: HAKeeper and
// the log shards, on replicas log stores.
//
// +kubebuilder:validation:XValidation:rule="!has(self.shardReplicas) || self.shardReplicas <= self.replicas",message="replicas must not be below shardReplicas: each replica of a shard lives on its own store",fieldPath=.replicas
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom)",message="restoreFrom is set only at creation: a restore never writes into a cluster that holds data",fieldPath=.restoreFrom
type LogSetSpec struct {
	// replicas is the number of log stores. Default 3; 1 to 7; can change,
	// never below shardReplicas. A store added joins HAKeeper without
	// replicas: HAKeeper keeps each shard at its replica count and puts a
	// replica only where one is missing, so the new store takes the
	// replicas of a store that fails or leaves. Stores leave one at a
	// time from the highest ordinal, each only while every shard keeps its
	// majority without it: its pod stops, HAKeeper expires it and moves its
	// replicas to the other stores, then its volume claim is deleted
	// (whatever storage.reclaimPolicy says: HAKeeper no longer counts on
	// anything it holds) and its pod's next store gets a new UUID. A store
	// keeps its identity (UUID, host name, deployment id) and its volume
	// while it is one of the set's.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	Replicas int32 `json:"replicas,omitempty"`

	// shardReplicas is the number of replicas of each log shard and of
	// HAKeeper's own shard, whose initial members are the first
	// shardReplicas stores. A shard keeps serving while a majority of its
	// replicas does. Default: replicas, at most 3; 1 to replicas;
	// immutable (fixed at HAKeeper's bootstrap).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="shardReplicas is immutable: HAKeeper's bootstrap fixed it"
	ShardReplicas int32 `json:"shardReplicas,omitempty"`

	// logShards is the number of log shards, and of TN shards. Default 1;
	// 1 to 8; immutable (fixed at HAKeeper's bootstrap).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logShards is immutable: HAKeeper's bootstrap fixed it"
	LogShards int32 `json:"logShards,omitempty"`

	// storeFailureTimeout is how long a log store must be down (its pod
	// not ready, HAKeeper not hearing from it) before the operator
	// replaces it: deletes its volume claim and its pod, so that the pod
	// comes back on a new volume as a new store, to which HAKeeper gives
	// the replicas the failed one held once it expires it
	// (logservice.HAKeeperConfig.log-store-timeout, 5m by default). A store
	// is replaced only while every shard keeps a majority of its replicas
	// on the other stores, one store at a time; never when the shards have
	// one replica. "0s" turns replacement off: the StoresHealthy condition
	// then says a store has failed. Default 10m; can change.
	// +optional
	// +kubebuilder:default="10m"
	StoreFailureTimeout *metav1.Duration `json:"storeFailureTimeout,omitempty"`

	// The log stores' image, resources, configuration and placement.
	PodSetSpec `json:",inline"`

	// storage is each log store's volume, where its raft log and snapshots
	// live. Default: 1Gi of the cluster's default storage class, retained;
	// can change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`

	// sharedStorage is the cluster's shared storage; the log service keeps
	// no table data there but MatrixOne configures it on every role.
	// Required; immutable.
	// +required
	SharedStorage SharedStorage `json:"sharedStorage"`

	// rootPassword names the Secret, in the LogSet's namespace, whose key
	// "password" is the password of root, the sys account's
	// administrator: the first CN sets it when it bootstraps the catalog,
	// and the operator logs in with it to drain CNs. Steward generates the
	// Secret, with a random password, when none has this name; it keeps
	// it when the LogSet is deleted unless storage.reclaimPolicy is
	// Delete, like the data it opens. Default "<name>-root"; immutable
	// (MatrixOne reads it only at its first bootstrap: change the password
	// with ALTER USER, then the Secret).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="rootPassword is immutable: MatrixOne read it at its bootstrap"
	RootPassword string `json:"rootPassword,omitempty"`

	// restoreFrom makes the LogSet's first start a restore of a Backup:
	// before any log store starts, the backup's table data is copied into
	// the empty shared storage and HAKeeper's ID allocators are seeded from
	// it (docs/matrixone.md, "Restore into a new cluster"). The shared storage must be S3 (or
	// a BucketClaim) at the Backup's endpoint, holding nothing, and
	// rootPassword must name a Secret holding the source cluster's root
	// password (the restored catalog's). A MatrixOneCluster's restore also
	// forces a global checkpoint and restarts its TN before it serves; a
	// LogSet restored alone leaves that to its user. Default: none (a new,
	// empty cluster); immutable, and only set at creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restoreFrom is immutable: the restore happens at the first start"
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`
}

// RestoreSource is what a new cluster is restored from.
type RestoreSource struct {
	// backup names a Backup in the same namespace; it must be Ready (a
	// complete, full backup). Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup"`
}

// RestoreStatus is the progress of a restore.
type RestoreStatus struct {
	// backupTS is the consistent point of the Backup restored from.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	BackupTS string `json:"backupTS,omitempty"`
	// lastKey is the last object of the backup copied so far, in key
	// order: a copy resumes after it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastKey string `json:"lastKey,omitempty"`
	// objectsCopied and bytesCopied count the backup's objects copied
	// into the shared storage so far.
	// +optional
	ObjectsCopied int64 `json:"objectsCopied,omitempty"`
	// bytesCopied is the size of the objects copied so far.
	// +optional
	BytesCopied int64 `json:"bytesCopied,omitempty"`
	// dataCopiedAt is when the copy completed: the log stores start from
	// then on.
	// +optional
	DataCopiedAt *metav1.Time `json:"dataCopiedAt,omitempty"`
	// restartedTN is the UID of the TN pod a MatrixOneCluster's restore
	// restarts once the global checkpoint was written (the TN then replays
	// from it, as any later restart will), recorded before it is deleted;
	// empty before. Set on the MatrixOneCluster's status only.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RestartedTN string `json:"restartedTN,omitempty"`
	// restartedCNs are the UIDs of the CN pods a MatrixOneCluster's restore
	// restarts once the restarted TN serves (a CN up across the TN's
	// restart was seen never to serve again), recorded before any is
	// deleted; empty before. Set on the MatrixOneCluster's status only.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=set
	RestartedCNs []string `json:"restartedCNs,omitempty"`
	// completedAt is when the restore completed: once the global
	// checkpoint was forced and the TN and CNs restarted, after which the proxies
	// start. Set on the MatrixOneCluster's status only: a LogSet's restore
	// ends at dataCopiedAt.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// LogSetStatus is the observed state of a log service.
type LogSetStatus struct {
	// conditions (Ready, Available, Progressing, Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation.
	commonv1.StatusCore `json:",inline"`

	// readyReplicas is the number of log stores whose pods are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// serviceAddresses are the log stores' service addresses (host:port):
	// where TN, CN and proxy reach HAKeeper. Sets that depend on this one
	// read them here.
	// +optional
	// +listType=atomic
	ServiceAddresses []string `json:"serviceAddresses,omitempty"`

	// bootstrap is HAKeeper's bootstrap as the operator decided it, once:
	// rendered the same on every start.
	// +optional
	Bootstrap *LogBootstrap `json:"bootstrap,omitempty"`

	// haKeeper is HAKeeper's state as its view last said
	// (HAKeeperRunning, HAKeeperBootstrapping, ...); empty when no view
	// could be read.
	// +optional
	HAKeeper string `json:"haKeeper,omitempty"`

	// stores are the set's log stores, by pod, as HAKeeper sees them.
	// +optional
	// +listType=map
	// +listMapKey=pod
	Stores []LogStoreStatus `json:"stores,omitempty"`

	// shards are the log shards (HAKeeper's, shard 0, first).
	// +optional
	// +listType=map
	// +listMapKey=shardID
	Shards []LogShardStatus `json:"shards,omitempty"`

	// restore is the progress of the restore spec.restoreFrom asks for.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// configRevision is the content-addressed ConfigMap of the stores'
	// configuration template.
	// +optional
	ConfigRevision string `json:"configRevision,omitempty"`
}

// LogBootstrap is HAKeeper's bootstrap.
type LogBootstrap struct {
	// deploymentID is the deployment id every store of the set carries, for
	// life (derived from the set's namespace and name, so a set re-created
	// under its name finds its retained volumes' data).
	// +required
	DeploymentID int64 `json:"deploymentID"`
	// initialMembers are HAKeeper's initial members, "<replica
	// ID>:<store UUID>".
	// +listType=atomic
	// +required
	InitialMembers []string `json:"initialMembers"`
}

// LogStoreStatus is one log store.
type LogStoreStatus struct {
	// pod is the store's pod.
	// +required
	Pod string `json:"pod"`
	// uuid is the store's UUID: the one of its pod's namespace and name,
	// or the new store's that replaced a failed one.
	// +required
	UUID string `json:"uuid"`
	// state is Up when the store's pod is ready and HAKeeper hears from
	// it; Down when its pod is gone or not ready, or HAKeeper no longer
	// hears from it; Unknown when HAKeeper does not know it or cannot be
	// read.
	// +required
	State StoreState `json:"state"`
	// replicas is the number of shard replicas the store holds.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// LogShardStatus is one log shard.
type LogShardStatus struct {
	// shardID is the shard's id; 0 is HAKeeper's own.
	// +required
	ShardID int64 `json:"shardID"`
	// leader is the pod of the store whose replica leads the shard; empty
	// when no replica leads (the shard does not serve) or the leader is no
	// pod of this set.
	// +optional
	Leader string `json:"leader,omitempty"`
	// replicas is the number of the shard's replicas on stores HAKeeper
	// hears from.
	// +required
	Replicas int32 `json:"replicas"`
	// of is the number of replicas the shard should have.
	// +required
	Of int32 `json:"of"`
	// term is the shard's raft term: it grows with every election, and
	// survives restarts with the stores' volumes.
	// +optional
	Term int64 `json:"term,omitempty"`
}

// LogSet is a MatrixOne log service: HAKeeper and the log shards on a set
// of log stores. A MatrixOneCluster creates one; it can also be used alone.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mols,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 48 characters: it names the Service and the StatefulSet's pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="HAKeeper",type=string,JSONPath=`.status.haKeeper`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`,priority=1
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LogSet struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired log service; sharedStorage is required.
	// +required
	Spec LogSetSpec `json:"spec"`
	// status is the observed log service.
	// +optional
	Status LogSetStatus `json:"status,omitempty"`
}

// LogSetList is a list of LogSets.
//
// +kubebuilder:object:root=true
type LogSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LogSet `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (l *LogSet) StatusCore() *commonv1.StatusCore { return &l.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (l *LogSet) IsPaused() bool { return l.Spec.Paused }

// RootPasswordSecret is the name of the Secret of root's password
// (spec.rootPassword, or its default).
func (l *LogSet) RootPasswordSecret() string {
	if l.Spec.RootPassword != "" {
		return l.Spec.RootPassword
	}
	return l.Name + "-root"
}
