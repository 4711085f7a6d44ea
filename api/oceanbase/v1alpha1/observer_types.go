package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBServerViewSpec says which observer of which cluster an OBServer shows.
// The OBCluster controller writes it when it creates the OBServer; it is
// the operator's and immutable.
type OBServerViewSpec struct {
	// cluster is the OBCluster, in this namespace, the server belongs to.
	// Required, set by the operator; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
	// zone is the server's zone. Required, set by the operator; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Zone string `json:"zone"`
	// ordinal is the observer's ordinal in its zone's StatefulSet; its pod
	// is <cluster>-<zone>-<ordinal>, the OBServer's name. Set by the
	// operator. Required; immutable.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	Ordinal int32 `json:"ordinal"`
}

// OBServerViewStatus is the observer as its cluster's status reports it.
type OBServerViewStatus struct {
	// conditions (Ready: OceanBase reports the server ACTIVE and serving,
	// and its pod is ready), observedGeneration.
	commonv1.StatusCore `json:",inline"`
	// status is the server's DBA_OB_SERVERS.STATUS (ACTIVE, INACTIVE,
	// DELETING); empty when OceanBase does not know the server (not added
	// yet, or deleted) or did not answer.
	// +optional
	Status string `json:"status,omitempty"`
	// address is the server's address in OceanBase, ip:2882 (the IP of
	// its own Service, which outlives the pod).
	// +optional
	Address string `json:"address,omitempty"`
	// pod is the observer's pod, when it exists.
	// +optional
	Pod string `json:"pod,omitempty"`
	// podReady is the pod's readiness.
	// +optional
	PodReady bool `json:"podReady,omitempty"`
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
	// rootService is true while the server runs the RootService.
	// +optional
	RootService bool `json:"rootService,omitempty"`
}

// OBServer is one observer of an OBCluster, as a view: the OBCluster
// controller creates one per observer (named after its pod, owned by the
// cluster, so it goes with it) and its own controller copies the server's
// state from the cluster's status. Users read it; they do not create or
// edit it (its spec is immutable); the observers are the OBCluster's
// spec.zones[].replicas.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obs,categories=steward
// +kubebuilder:metadata:annotations="steward.dev/created-by=operator"
// Two rules, since one comparing the whole name exceeds the API server's
// CEL cost budget (metadata.name has no bound in the schema).
// +kubebuilder:validation:XValidation:rule="self.metadata.name.startsWith(self.spec.cluster + '-' + self.spec.zone + '-')",message="metadata.name must be <spec.cluster>-<spec.zone>-<spec.ordinal>, the observer's pod"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.substring(self.metadata.name.lastIndexOf('-') + 1) == string(self.spec.ordinal)",message="metadata.name must be <spec.cluster>-<spec.zone>-<spec.ordinal>: its ordinal is not spec.ordinal"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`
// +kubebuilder:printcolumn:name="RS",type=boolean,JSONPath=`.status.rootService`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.image`,priority=1
// +kubebuilder:printcolumn:name="Build",type=string,JSONPath=`.status.buildVersion`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Serving-Since",type=date,JSONPath=`.status.startServiceTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBServer struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the observer and its cluster; the operator's.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is the operator's and immutable"
	Spec OBServerViewSpec `json:"spec"`
	// status is the observer as the cluster's status reports it.
	// +optional
	Status OBServerViewStatus `json:"status,omitempty"`
}

// OBServerList is a list of OBServers.
//
// +kubebuilder:object:root=true
type OBServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBServer `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (s *OBServer) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }
