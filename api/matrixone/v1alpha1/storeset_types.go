package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// TNSetSpec is the desired state of MatrixOne's transaction node: one TN
// store, which commits transactions to the log service and writes table
// data to the shared storage.
type TNSetSpec struct {
	// logSet names the LogSet, in the TNSet's namespace, whose HAKeeper
	// the TN joins and whose shared storage it writes to. The TN waits
	// for it to be Available. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logSet is immutable: a TN belongs to one cluster"
	LogSet string `json:"logSet"`

	// The TN store's image, resources, configuration and placement.
	PodSetSpec `json:",inline"`

	// storage is the TN store's volume (its data directory, which holds
	// what it has not yet written to the shared storage). Default: 1Gi of
	// the cluster's default storage class, retained; can change as its
	// fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// CNSetSpec is the desired state of a group of MatrixOne compute nodes,
// which serve SQL.
type CNSetSpec struct {
	// logSet names the LogSet, in the CNSet's namespace, whose HAKeeper the
	// CNs join and whose shared storage they read. The CNs wait for it to
	// be Available and for HAKeeper to hear from a TN. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logSet is immutable: a CN belongs to one cluster"
	LogSet string `json:"logSet"`

	// replicas is the number of CNs. Default 1; 0 to 64; can change.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Replicas *int32 `json:"replicas,omitempty"`

	// proxyEnabled tells the CNs that their clients come through a
	// ProxySet, which hands each session's identity to the CN and can move
	// sessions between CNs. A client connecting to a CN directly then
	// waits a moment for the proxy's handshake before its own. Default
	// true; can change (restarts the CNs).
	// +optional
	// +kubebuilder:default=true
	ProxyEnabled *bool `json:"proxyEnabled,omitempty"`

	// drainTimeout bounds a CN's drain before it leaves the set or
	// restarts: the CN is set draining, the proxy moves its sessions to
	// the other CNs between two statements, and it goes when it holds no
	// session, or at this timeout with the sessions it still holds (an
	// event says how many). Default 5m; can change.
	// +optional
	// +kubebuilder:default="5m"
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`

	// labels are the CN labels HAKeeper gives every CN of the set: each
	// key with its values. The proxy routes a session only to the CNs
	// whose labels match its own: its account (key "account") and the
	// connection attributes its client sends; a session whose labels no
	// labeled CN matches goes to the CNs without labels. So
	// [{key: account, values: [acc1]}] gives the account acc1 CNs of its
	// own, which no other account's session reaches. Keys and values are letters,
	// digits and underscores (as mo_ctl's label command takes them). The
	// operator sets them on each CN once HAKeeper hears from it, and
	// again whenever HAKeeper's differ. Default none; can change (no CN
	// restarts).
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=8
	Labels []CNLabel `json:"labels,omitempty"`

	// The CNs' image, resources, configuration and placement.
	PodSetSpec `json:",inline"`

	// storage is each CN's volume: its data directory and the shared
	// storage's disk cache. Default: 1Gi of the cluster's default storage
	// class, retained; can change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// ProxySetSpec is the desired state of MatrixOne's proxies: the SQL
// endpoint clients connect to, which routes each session to a CN.
type ProxySetSpec struct {
	// logSet names the LogSet, in the ProxySet's namespace, whose HAKeeper
	// the proxies ask for the CNs. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logSet is immutable: a proxy belongs to one cluster"
	LogSet string `json:"logSet"`

	// replicas is the number of proxies. Default 1; 1 to 16; can change.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Replicas int32 `json:"replicas,omitempty"`

	// The proxies' image, resources, configuration and placement.
	PodSetSpec `json:",inline"`

	// serviceType is the type of the SQL Service (port 6001) clients
	// connect to: ClusterIP, NodePort or LoadBalancer. Default ClusterIP;
	// can change.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
}

// StoreSetStatus is the observed state of a TNSet, CNSet or ProxySet.
type StoreSetStatus struct {
	// conditions (Ready, Available, Progressing, Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation.
	commonv1.StatusCore `json:",inline"`

	// readyReplicas is the number of the set's pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// stores are the set's stores, by pod, as HAKeeper sees them.
	// +optional
	// +listType=map
	// +listMapKey=pod
	Stores []StoreStatus `json:"stores,omitempty"`

	// sqlAddress is where clients reach SQL (CNSet, ProxySet): the SQL
	// Service's host:port in the cluster.
	// +optional
	SQLAddress string `json:"sqlAddress,omitempty"`

	// configRevision is the content-addressed ConfigMap of the stores'
	// configuration template.
	// +optional
	ConfigRevision string `json:"configRevision,omitempty"`

	// selector is the label selector of the set's pods, serialized: a
	// CNSet's scale subresource gives it to a HorizontalPodAutoscaler,
	// which reads the pods' metrics with it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`
}

// StoreStatus is one store of a TNSet, CNSet or ProxySet.
type StoreStatus struct {
	// pod is the store's pod.
	// +required
	Pod string `json:"pod"`
	// uuid is the store's UUID (derived from its pod's namespace and name).
	// +required
	UUID string `json:"uuid"`
	// state is Up when the store's pod is ready and HAKeeper hears from
	// it; Down when its pod is gone or not ready, or HAKeeper no longer
	// hears from it; Unknown when HAKeeper does not know it or cannot be
	// read.
	// +required
	State StoreState `json:"state"`
	// workState is a CN's work state (Working, Draining, Drained).
	// +optional
	WorkState string `json:"workState,omitempty"`
	// labels are a CN's labels as HAKeeper has them, which the proxy
	// routes sessions by, in key order.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=64
	Labels []CNLabel `json:"labels,omitempty"`
}

// CNLabel is one CN label: a key and its values.
type CNLabel struct {
	// key is the label's key ("account" routes an account's sessions):
	// letters, digits and underscores. Required; can change (another
	// label).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Key string `json:"key"`
	// values are the label's values: letters, digits and underscores.
	// Required; can change.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Values []string `json:"values"`
}

// TNSet is MatrixOne's transaction node. A MatrixOneCluster creates one;
// it can also be used alone, next to a LogSet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=motn,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 48 characters: it names the Service and the StatefulSet's pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Log-Set",type=string,JSONPath=`.spec.logSet`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`,priority=1
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TNSet struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired TN; logSet is required.
	// +required
	Spec TNSetSpec `json:"spec"`
	// status is the observed TN.
	// +optional
	Status StoreSetStatus `json:"status,omitempty"`
}

// TNSetList is a list of TNSets.
//
// +kubebuilder:object:root=true
type TNSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TNSet `json:"items"`
}

// CNSet is a group of MatrixOne compute nodes. A MatrixOneCluster creates
// them; it can also be used alone, next to a LogSet and a TNSet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.readyReplicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=mocn,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 48 characters: it names the Services and the StatefulSet's pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Log-Set",type=string,JSONPath=`.spec.logSet`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="SQL",type=string,JSONPath=`.status.sqlAddress`,priority=1
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`,priority=1
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CNSet struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired CNs; logSet is required.
	// +required
	Spec CNSetSpec `json:"spec"`
	// status is the observed CNs.
	// +optional
	Status StoreSetStatus `json:"status,omitempty"`
}

// CNSetList is a list of CNSets.
//
// +kubebuilder:object:root=true
type CNSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CNSet `json:"items"`
}

// ProxySet is MatrixOne's proxies. A MatrixOneCluster creates one; it can
// also be used alone, in front of CNSets.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=moproxy,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 48 characters: it names the Services and the StatefulSet's pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Log-Set",type=string,JSONPath=`.spec.logSet`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="SQL",type=string,JSONPath=`.status.sqlAddress`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`,priority=1
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxySet struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired proxies; logSet is required.
	// +required
	Spec ProxySetSpec `json:"spec"`
	// status is the observed proxies.
	// +optional
	Status StoreSetStatus `json:"status,omitempty"`
}

// ProxySetList is a list of ProxySets.
//
// +kubebuilder:object:root=true
type ProxySetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxySet `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (s *TNSet) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }

// StatusCore returns the status the framework owns (framework.Object).
func (s *CNSet) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }

// StatusCore returns the status the framework owns (framework.Object).
func (s *ProxySet) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (s *TNSet) IsPaused() bool { return s.Spec.Paused }

// IsPaused reports spec.paused (framework.Pausable).
func (s *CNSet) IsPaused() bool { return s.Spec.Paused }

// IsPaused reports spec.paused (framework.Pausable).
func (s *ProxySet) IsPaused() bool { return s.Spec.Paused }
