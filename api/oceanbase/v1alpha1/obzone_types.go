package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBZoneViewSpec says which zone of which cluster an OBZone shows. The
// OBCluster controller writes it when it creates the OBZone; it is the
// operator's and immutable: to change a zone, change the OBCluster's
// spec.zones.
type OBZoneViewSpec struct {
	// cluster is the OBCluster, in this namespace, the zone belongs to.
	// Required, set by the operator; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
	// zone is the zone's name in OceanBase and in the cluster's
	// spec.zones. Required, set by the operator; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Zone string `json:"zone"`
}

// OBZoneViewStatus is the zone as its cluster's status reports it.
type OBZoneViewStatus struct {
	// conditions (Ready: the zone is ACTIVE in OceanBase and each of its
	// servers serves), observedGeneration.
	commonv1.StatusCore `json:",inline"`
	// status is the zone's DBA_OB_ZONES.STATUS (ACTIVE, INACTIVE); empty
	// when OceanBase does not know the zone or did not answer.
	// +optional
	Status string `json:"status,omitempty"`
	// replicas is the number of observers the cluster's spec gives the
	// zone.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// servers counts the zone's servers OceanBase knows.
	// +optional
	Servers int32 `json:"servers,omitempty"`
	// activeServers counts those ACTIVE and serving.
	// +optional
	ActiveServers int32 `json:"activeServers,omitempty"`
	// readyPods counts the zone's observer pods that are ready.
	// +optional
	ReadyPods int32 `json:"readyPods,omitempty"`
}

// OBZone is one zone of an OBCluster, as a view: the OBCluster controller
// creates one per zone of its spec (named <cluster>-<zone>, owned by the
// cluster, so it goes with it) and its own controller copies the zone's
// state from the cluster's status. Users read it; they do not create or
// edit it (its spec is immutable); the zone itself is the OBCluster's
// spec.zones.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obz,categories=steward
// +kubebuilder:metadata:annotations="steward.dev/created-by=operator"
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.cluster + '-' + self.spec.zone",message="metadata.name must be <spec.cluster>-<spec.zone>"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeServers`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBZone struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the zone and its cluster; the operator's.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is the operator's and immutable"
	Spec OBZoneViewSpec `json:"spec"`
	// status is the zone as the cluster's status reports it.
	// +optional
	Status OBZoneViewStatus `json:"status,omitempty"`
}

// OBZoneList is a list of OBZones.
//
// +kubebuilder:object:root=true
type OBZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBZone `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (z *OBZone) StatusCore() *commonv1.StatusCore { return &z.Status.StatusCore }
