package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// GpssClusterSpec is the desired state of a distributed GPSS cluster.
//
// +kubebuilder:validation:XValidation:rule="self.ports.grpc != self.ports.gpfdist && self.ports.grpc != self.ports.cluster && self.ports.gpfdist != self.ports.cluster",message="ports.grpc, ports.gpfdist and ports.cluster must differ",fieldPath=.ports
type GpssClusterSpec struct {
	// replicas is the number of GPSS instances. Default 2 (a job's
	// instance can then fail while gpsscli still reaches the cluster);
	// 1 to 64; can change: scale-in stops the running jobs, removes the
	// last instances and their gpfdist Services, and starts the jobs again
	// on the instances that stay (docs/gpss.md).
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Replicas int32 `json:"replicas,omitempty"`

	// image is the GPSS container image. It runs as `gpss <config>`'s
	// equivalent with the rendered gpss.json as its argument (see
	// docs/gpss.md for the image contract). Required; can change: the
	// instances move to it one at a time, each only after the one before
	// is ready with its jobs running; setting the previous image back
	// rolls back, even while a rollout is halted.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// rolloutHaltSeconds is how long an instance on a new image may stay
	// unready before the rollout halts (status says so, and no other
	// instance is touched until spec.image changes). Default 90; 1 to 3600;
	// can change.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	RolloutHaltSeconds int32 `json:"rolloutHaltSeconds,omitempty"`

	// imagePullPolicy is the instances' image pull policy. Default: unset,
	// Kubernetes' default; can change.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// clusterID is GPSS's Cluster.Id: the instances with the same id form
	// one cluster in their etcd. Required; immutable; unique among the
	// GpssClusters of the namespace (admission refuses a taken one).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID string `json:"clusterID"`

	// serviceAccountName is the instances' ServiceAccount. Default: one
	// the operator creates, <name>-gpss, with no permissions and no
	// mounted token (GPSS needs no Kubernetes API); can change (restarts
	// the instances).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// config is GPSS's configuration, gpss.json, as an object: logging,
	// keep-alive, authentication, job store and the other settings GPSS
	// documents. The operator owns ListenAddress.Host and .Port,
	// Gpfdist.Host and .Port, Cluster.Id, Cluster.Port and
	// Cluster.Etcd.Endpoints, and sets them from ports, clusterID and etcd;
	// a config that sets one is refused at admission. Any other port in it
	// (a key ending in Port, as ListenAddress.DebugPort) must be 1-65535
	// and differ from every other. Default: empty; can change (restarts
	// the instances).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Config *runtime.RawExtension `json:"config,omitempty"`

	// ports are the instances' listeners. Default: gRPC 5000, gpfdist
	// 8080, cluster 5001; can change (restarts the instances).
	// +optional
	// +kubebuilder:default={}
	Ports Ports `json:"ports,omitempty"`

	// etcd is where the instances coordinate. Default: an etcd the operator
	// runs for this cluster (managed). With endpoints, an existing etcd.
	// Can change as its fields say, but never between the two.
	// +optional
	// +kubebuilder:default={}
	Etcd EtcdSpec `json:"etcd,omitempty"`

	// gpfdistService is the Service each instance gets for its gpfdist
	// port, so that Greenplum's segments reach the instance that runs their
	// job. Default: ClusterIP; can change.
	// +optional
	// +kubebuilder:default={}
	GpfdistService GpfdistServiceSpec `json:"gpfdistService,omitempty"`

	// resources are the GPSS container's requests and limits. Default:
	// none; can change (restarts the instances).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// The instances' placement: nodeSelector, affinity, tolerations,
	// topologySpreadConstraints and priorityClassName. Default: a
	// preferred spreading over nodes; can change (restarts the instances).
	commonv1.PodPlacement `json:",inline"`

	// paused stops the controller from acting on the cluster (its pods keep
	// running). Default false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// Ports are a GPSS instance's listeners.
type Ports struct {
	// grpc is ListenAddress.Port: gpsscli's and the Batch Data API's port,
	// behind the cluster's gRPC Service. Default 5000; can change
	// (restarts the instances).
	// +optional
	// +kubebuilder:default=5000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	GRPC int32 `json:"grpc,omitempty"`

	// gpfdist is Gpfdist.Port: where Greenplum's segments read a job's
	// data, behind each instance's gpfdist Service. Default 8080; can
	// change (restarts the instances).
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Gpfdist int32 `json:"gpfdist,omitempty"`

	// cluster is Cluster.Port, the instances' port among themselves.
	// Default 5001; can change (restarts the instances).
	// +optional
	// +kubebuilder:default=5001
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Cluster int32 `json:"cluster,omitempty"`
}

// EtcdSpec is the etcd a cluster coordinates through: an existing one
// (endpoints) or one the operator runs (managed, the default).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.endpoints) && size(self.endpoints) > 0 && has(self.managed))",message="give etcd.endpoints or etcd.managed, not both"
// +kubebuilder:validation:XValidation:rule="(has(self.endpoints) && size(self.endpoints) > 0) == (has(oldSelf.endpoints) && size(oldSelf.endpoints) > 0)",message="a cluster cannot switch between a managed etcd and etcd.endpoints"
type EtcdSpec struct {
	// endpoints are the client URLs of an existing etcd, as
	// http(s)://host:port. Default: none (a managed etcd); can change
	// (restarts the instances), but not to or from none.
	// +optional
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^https?://[^/\s]+$`
	// +listType=set
	Endpoints []string `json:"endpoints,omitempty"`

	// managed is the etcd the operator runs when no endpoints are given.
	// Default: with no endpoints, a managed etcd of the defaults below
	// (the controller fills it in, not the schema); can change as its
	// fields say.
	// +optional
	Managed *ManagedEtcd `json:"managed,omitempty"`
}

// ManagedEtcd is an etcd the operator runs for one GpssCluster, from the
// upstream etcd image.
type ManagedEtcd struct {
	// image is the etcd image. Default "localhost/gpss-etcd:3.6.8"; can change
	// (restarts the members one at a time).
	// +optional
	// +kubebuilder:default="localhost/gpss-etcd:3.6.8"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// replicas is the number of etcd members: 1, or 3 to survive the loss
	// of one. Default 1; immutable.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Enum=1;3
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="etcd.managed.replicas is immutable"
	Replicas int32 `json:"replicas,omitempty"`

	// storage is each member's volume. Default: 1Gi of the default storage
	// class, retained when the cluster is deleted (reclaimPolicy); can
	// change as its fields say.
	// +optional
	// +kubebuilder:default={}
	Storage commonv1.StorageSpec `json:"storage,omitempty"`
}

// GpfdistServiceSpec is the Service of each instance's gpfdist port.
type GpfdistServiceSpec struct {
	// type is the Service type: ClusterIP, NodePort or LoadBalancer (for
	// segments outside the Kubernetes cluster). Default ClusterIP; can
	// change.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`

	// annotations are added to every gpfdist Service, for example a cloud
	// load balancer's settings. Default: none; can change.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// GpssClusterStatus is the observed state of a GPSS cluster.
type GpssClusterStatus struct {
	// conditions (Ready, Available, Progressing, Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation, the running or last task flow
	// (scaling, upgrade).
	commonv1.StatusCore `json:",inline"`

	// readyReplicas is the number of instances whose pods are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// instances are the instances, in ordinal order.
	// +optional
	// +listType=map
	// +listMapKey=name
	Instances []InstanceStatus `json:"instances,omitempty"`

	// grpcEndpoint is the host:port gpsscli connects to: the gRPC
	// Service's cluster DNS name and port.
	// +optional
	GRPCEndpoint string `json:"grpcEndpoint,omitempty"`

	// etcdEndpoints are the etcd client URLs the instances use.
	// +optional
	// +listType=atomic
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`

	// currentImage is the image every instance runs; during a rollout it
	// stays the old one until all instances run the new one.
	// +optional
	CurrentImage string `json:"currentImage,omitempty"`

	// previousImage is the image before currentImage, the one a rollback
	// returns to.
	// +optional
	PreviousImage string `json:"previousImage,omitempty"`

	// stoppedJobs are the ids of the jobs the operator stopped to take
	// instances away (a scale-in): they were running, and it starts them
	// again on the instances that stay, then clears this list. GPSS does
	// not say which instance runs a job, so a scale-in stops every running
	// job (docs/gpss.md).
	// +optional
	// +listType=set
	StoppedJobs []string `json:"stoppedJobs,omitempty"`

	// jobsInErrorBeforeScaleIn are the ids of the jobs that were in
	// JOB_ERROR when a scale-in recorded the running jobs. A job that goes
	// to JOB_ERROR during the scale-in (one a client started meanwhile on a
	// departing instance) is started again with the stopped jobs; these,
	// in error before, are left as they are. Cleared with stoppedJobs.
	// +optional
	// +listType=set
	JobsInErrorBeforeScaleIn []string `json:"jobsInErrorBeforeScaleIn,omitempty"`

	// jobs counts the cluster's jobs by state as the instances last listed
	// them (GPSS's ListJobs); absent until an instance answered.
	// +optional
	Jobs *JobsStatus `json:"jobs,omitempty"`

	// configRevision is the name of the content-addressed ConfigMap of the
	// gpss.json every instance runs; during a rollout it stays the old one
	// until all instances run the new one and are ready.
	// +optional
	ConfigRevision string `json:"configRevision,omitempty"`
}

// InstanceStatus is one GPSS instance.
type InstanceStatus struct {
	// name is the instance's pod.
	// +required
	Name string `json:"name"`
	// gpfdistAddress is where Greenplum's segments reach the instance's
	// gpfdist: host:port of its Service as reachable from outside when the
	// Service type allows (a load balancer's address, or a node port on
	// any node), else its cluster DNS name.
	// +optional
	GpfdistAddress string `json:"gpfdistAddress,omitempty"`
	// ready is the pod's readiness.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// image is the image the instance's pod runs.
	// +optional
	Image string `json:"image,omitempty"`
}

// JobsStatus counts a cluster's jobs by GPSS's job states.
type JobsStatus struct {
	// running is how many jobs run (JOB_RUNNING).
	// +required
	Running int32 `json:"running"`

	// stopped is how many jobs are stopped (JOB_STOPPED): submitted and
	// never started, stopped by a user, or stopped for a scale-in.
	// +required
	Stopped int32 `json:"stopped"`

	// error is how many jobs are in error (JOB_ERROR): typically their
	// instance went while they ran; starting them again runs them on
	// another instance.
	// +required
	Error int32 `json:"error"`

	// inError names up to 10 of the jobs in error, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	InError []string `json:"inError,omitempty"`
}

// GpssCluster is a distributed GPSS cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gpss,categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 48 characters: it names the Services, the StatefulSet's pods and the managed etcd"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Jobs-Running",type=integer,JSONPath=`.status.jobs.running`,priority=1
// +kubebuilder:printcolumn:name="Jobs-Error",type=integer,JSONPath=`.status.jobs.error`
// +kubebuilder:printcolumn:name="Cluster-ID",type=string,JSONPath=`.spec.clusterID`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.currentImage`,priority=1
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GpssCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster; image and clusterID are required.
	// +required
	Spec GpssClusterSpec `json:"spec"`
	// status is the observed cluster.
	// +optional
	Status GpssClusterStatus `json:"status,omitempty"`
}

// GpssClusterList is a list of GpssClusters.
//
// +kubebuilder:object:root=true
type GpssClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GpssCluster `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (g *GpssCluster) StatusCore() *commonv1.StatusCore { return &g.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (g *GpssCluster) IsPaused() bool { return g.Spec.Paused }
