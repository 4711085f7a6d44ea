package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBClusterSpec is the desired state of an OceanBase cluster.
type OBClusterSpec struct {
	// clusterName is the observers' --appname, the name OceanBase knows the
	// cluster by. Default: metadata.name; immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName,omitempty"`

	// clusterID is the observers' --cluster_id. Default 1; immutable.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294901759
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID int64 `json:"clusterID,omitempty"`

	// image is the observer's container image (docs/oceanbase.md gives
	// the image contract). Required; can change: a later version upgrades
	// zone by zone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// imagePullPolicy is the observers' image pull policy. Default: unset,
	// Kubernetes' default; can change.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// zones are the cluster's zones, each with its observers. Required: one to seven
	// zones, with distinct names; an odd number keeps a majority when one
	// is lost. Can change: a zone added is added to OceanBase and to the
	// sys tenant's locality, a zone removed leaves them before its
	// observers go (docs/oceanbase.md). One edit either adds zones or
	// removes them, not both (the locality changes one zone at a time),
	// and keeps at least one zone and a majority of the current ones
	// unless it removes a single zone. Each zone's replicas can change
	// (scale out and in).
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:XValidation:rule="self.all(z, oldSelf.exists(o, o.name == z.name)) || oldSelf.all(o, self.exists(z, z.name == o.name))",message="an edit may add zones or remove zones, not both: the sys tenant's locality changes one zone at a time; add the new zones first, then remove the old ones"
	// +kubebuilder:validation:XValidation:rule="oldSelf.exists(o, self.exists(z, z.name == o.name))",message="at least one of the current zones must stay"
	// +kubebuilder:validation:XValidation:rule="oldSelf.filter(o, !self.exists(z, z.name == o.name)).size() <= 1 || oldSelf.filter(o, self.exists(z, z.name == o.name)).size() * 2 > oldSelf.size()",message="an edit that removes several zones must keep a majority of the current zones (5 to 3, not 3 to 1): remove them one at a time"
	Zones []OBZoneSpec `json:"zones"`

	// resources are each observer's requests and limits. Default: none;
	// can change only with an upgrade (later version). The observer's
	// memory_limit and cpu_count come from the memory and CPU limit when
	// they are set.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// storage is each observer's volume, for its data, redo log and
	// system log. Default 1Gi of the default class, retained when the
	// cluster is deleted; can change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`

	// parameters are cluster-scope parameters, set with ALTER SYSTEM SET
	// once the cluster is bootstrapped and kept set: a value changed by
	// other means is set back. Names are unique. Default: none; can
	// change.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Parameters []Parameter `json:"parameters,omitempty"`

	// credentials name the Secrets holding the passwords of root and of
	// the operator's own user. Default: Secrets the controller generates,
	// <name>-root and <name>-operator; immutable.
	// +optional
	Credentials Credentials `json:"credentials,omitempty"`

	// placement schedules the observers (node selector, affinity,
	// tolerations); a zone's placement replaces it for that zone. Default:
	// none; can change: pods move when they are next re-created.
	// +optional
	Placement commonv1.PodPlacement `json:"placement,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// OBZoneSpec is one zone of a cluster.
type OBZoneSpec struct {
	// name is the zone's name in OceanBase. Required; a zone renamed is
	// another zone (one removed, one added): a name cannot change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// replicas is the number of observers in the zone. Default 1; 1 to
	// 16; can change: a scale-in deletes the last servers from OceanBase
	// and waits until OceanBase has moved their units away before their
	// pods go.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Replicas int32 `json:"replicas,omitempty"`

	// placement schedules this zone's observers instead of the cluster's
	// placement. Default: the cluster's; can change.
	// +optional
	Placement *commonv1.PodPlacement `json:"placement,omitempty"`
}

// Parameter is an OceanBase parameter and its value.
type Parameter struct {
	// name is the parameter's name, as OceanBase spells it. Required; a
	// parameter renamed is another parameter: a name cannot change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Name string `json:"name"`
	// value is the parameter's value, as ALTER SYSTEM SET takes it.
	// Required; can change.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`
}

// Credentials name the Secrets of the cluster's users (key "password").
type Credentials struct {
	// root is the Secret holding the sys tenant's root password. Default:
	// <name>-root, generated; immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="credentials.root is immutable"
	Root string `json:"root,omitempty"`
	// operator is the Secret holding the password of the user the
	// controller logs in as (operator, in the sys tenant). Default:
	// <name>-operator, generated; immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="credentials.operator is immutable"
	Operator string `json:"operator,omitempty"`
}

// OBClusterStatus is the observed state of an OceanBase cluster.
type OBClusterStatus struct {
	// conditions (Ready, Bootstrapped, StoresLost, Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation, the running or last task flow
	// (bootstrap, scale-in, upgrade, add-zone, remove-zone, recover).
	commonv1.StatusCore `json:",inline"`

	// bootstrappedAt is when the cluster was bootstrapped; until then the
	// observers run empty.
	// +optional
	BootstrappedAt *metav1.Time `json:"bootstrappedAt,omitempty"`

	// rootService is the server that runs the RootService, as OceanBase
	// says (DBA_OB_SERVERS.WITH_ROOTSERVER).
	// +optional
	RootService string `json:"rootService,omitempty"`

	// zones are the zones as OceanBase reports them.
	// +optional
	// +listType=map
	// +listMapKey=name
	Zones []OBZoneStatus `json:"zones,omitempty"`

	// servers are the observers: their pods, and their state in OceanBase.
	// +optional
	// +listType=map
	// +listMapKey=pod
	Servers []OBServerStatus `json:"servers,omitempty"`

	// activeServers counts the servers OceanBase reports ACTIVE and
	// serving.
	// +optional
	ActiveServers int32 `json:"activeServers,omitempty"`

	// image is the image every observer runs.
	// +optional
	Image string `json:"image,omitempty"`

	// parameterDrift lists the spec's parameters as the servers report them:
	// one entry per parameter whose value differs on some server.
	// +optional
	// +listType=map
	// +listMapKey=name
	ParameterDrift []ParameterDrift `json:"parameterDrift,omitempty"`

	// lostServers are servers whose observer lost its store (its volume
	// claim is not the one the server was added with): OceanBase still
	// lists them, INACTIVE, at the address they had. The recover flow
	// records one here before it gives the observer a new address, and
	// removes it once OceanBase no longer lists it. Set by the controller.
	// +optional
	// +listType=map
	// +listMapKey=address
	LostServers []OBLostServer `json:"lostServers,omitempty"`
}

// OBLostServer is a server whose observer lost its store.
type OBLostServer struct {
	// address is the lost server's address in OceanBase (ip:2882), the IP
	// its observer's Service had.
	// +required
	Address string `json:"address"`
	// pod is the observer that lost the store.
	// +required
	Pod string `json:"pod"`
	// zone is the server's zone.
	// +required
	Zone string `json:"zone"`
}

// OBZoneStatus is a zone as OceanBase reports it.
type OBZoneStatus struct {
	// name is the zone's name.
	// +required
	Name string `json:"name"`
	// status is DBA_OB_ZONES.STATUS: ACTIVE or INACTIVE; empty when
	// OceanBase does not know the zone.
	// +optional
	Status string `json:"status,omitempty"`
	// servers counts the zone's servers OceanBase knows.
	// +optional
	Servers int32 `json:"servers,omitempty"`
	// activeServers counts those ACTIVE and serving.
	// +optional
	ActiveServers int32 `json:"activeServers,omitempty"`
	// leaving is true for a zone the spec no longer has that OceanBase, the
	// sys tenant or a StatefulSet still has: the remove-zone flow takes it
	// out, and its observers are listed in servers until their pods go.
	// +optional
	Leaving bool `json:"leaving,omitempty"`
}

// OBServerStatus is one observer.
type OBServerStatus struct {
	// pod is the observer's pod.
	// +required
	Pod string `json:"pod"`
	// zone is the observer's zone.
	// +required
	Zone string `json:"zone"`
	// address is the server's address in OceanBase, ip:2882: the IP of its
	// own Service, which outlives the pod.
	// +optional
	Address string `json:"address,omitempty"`
	// podReady is the pod's readiness.
	// +optional
	PodReady bool `json:"podReady,omitempty"`
	// status is DBA_OB_SERVERS.STATUS (ACTIVE, INACTIVE, DELETING); empty
	// when OceanBase does not know the server (not added yet, or deleted).
	// +optional
	Status string `json:"status,omitempty"`
	// startServiceTime is when the server started serving; empty while it
	// does not.
	// +optional
	StartServiceTime *metav1.Time `json:"startServiceTime,omitempty"`
	// buildVersion is the server's build_version.
	// +optional
	BuildVersion string `json:"buildVersion,omitempty"`
	// image is the image the observer's pod runs.
	// +optional
	Image string `json:"image,omitempty"`
}

// ParameterDrift is a parameter whose value on some server differs from
// the spec's.
type ParameterDrift struct {
	// name is the parameter's name.
	// +required
	Name string `json:"name"`
	// servers are the servers (ip:port) with another value, and the value.
	// +optional
	// +listType=atomic
	Servers []string `json:"servers,omitempty"`
}

// OBCluster is an OceanBase cluster: observers in zones, bootstrapped and
// kept by the controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obc,categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters: it names the zones' StatefulSets, their pods and the servers' Services"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Bootstrapped",type=string,JSONPath=`.status.conditions[?(@.type=="Bootstrapped")].status`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeServers`
// +kubebuilder:printcolumn:name="RootService",type=string,JSONPath=`.status.rootService`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.image`,priority=1
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster; image and zones are required.
	// +required
	Spec OBClusterSpec `json:"spec"`
	// status is the observed cluster.
	// +optional
	Status OBClusterStatus `json:"status,omitempty"`
}

// OBClusterList is a list of OBClusters.
//
// +kubebuilder:object:root=true
type OBClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBCluster `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (c *OBCluster) StatusCore() *commonv1.StatusCore { return &c.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (c *OBCluster) IsPaused() bool { return c.Spec.Paused }
