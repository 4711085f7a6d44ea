package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBParameterSpec is an OceanBase parameter, a cluster's or a tenant's, and
// the value it should have.
type OBParameterSpec struct {
	// cluster is the OBCluster, in this namespace, whose parameter this
	// is. Required; immutable. Admission rejects a name no OBCluster has.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable"
	Cluster string `json:"cluster"`

	// name is the parameter's name, as OceanBase spells it: a cluster
	// parameter (GV$OB_PARAMETERS lists it with no tenant), or with
	// tenant, a tenant's. Required;
	// immutable. Admission rejects a name the cluster's spec.parameters
	// sets, or that another OBParameter of the cluster sets; a name
	// OceanBase does not know makes the spec invalid (Synced=False,
	// InvalidSpec, with OceanBase's message).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="name is immutable"
	Name string `json:"name"`

	// value is the parameter's value, as ALTER SYSTEM SET takes it.
	// Required; can change.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`

	// zone limits the parameter to the servers of one zone of the cluster
	// (ALTER SYSTEM SET ... ZONE = 'zone'). Default: unset, every server;
	// immutable. At most one of zone and server.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zone is immutable"
	Zone string `json:"zone,omitempty"`

	// server limits the parameter to one server of the cluster, named by
	// its OBServer (its pod: <cluster>-<zone>-<ordinal>); the controller
	// sets it at the server's address (ALTER SYSTEM SET ... SERVER =
	// 'ip:2882'). Default: unset, every server; immutable. At most one of
	// zone and server.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="server is immutable"
	Server string `json:"server,omitempty"`

	// tenant makes the parameter a tenant's: name is a tenant parameter,
	// set for the tenant of this OBTenant (ALTER SYSTEM SET ... TENANT =
	// 'tenantName'), which must be of the cluster. Default: unset, a
	// cluster parameter; immutable. Excludes zone and server.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenant is immutable"
	Tenant string `json:"tenant,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// OBParameterStatus is the parameter as the cluster's servers report it.
type OBParameterStatus struct {
	// conditions (Ready: every server in scope reports spec.value; Synced;
	// and the framework's Paused and DependenciesReady),
	// observedGeneration.
	commonv1.StatusCore `json:",inline"`

	// editLevel is how the parameter takes effect, as OceanBase says
	// (DYNAMIC_EFFECTIVE, STATIC_EFFECTIVE: when a server restarts).
	// +optional
	EditLevel string `json:"editLevel,omitempty"`

	// servers are the servers in scope and the value each reports.
	// +optional
	// +listType=map
	// +listMapKey=address
	Servers []OBParameterServer `json:"servers,omitempty"`

	// drifted counts the servers in scope whose value is not spec.value.
	// +optional
	Drifted int32 `json:"drifted,omitempty"`

	// setValue is the value the controller last set, and setAt when.
	// +optional
	SetValue string `json:"setValue,omitempty"`
	// setAt is when the controller last set the value.
	// +optional
	SetAt *metav1.Time `json:"setAt,omitempty"`
}

// OBParameterServer is a parameter's value on one server.
type OBParameterServer struct {
	// address is the server's address, ip:2882.
	// +required
	Address string `json:"address"`
	// zone is the server's zone.
	// +optional
	Zone string `json:"zone,omitempty"`
	// value is the parameter's value on the server.
	// +optional
	Value string `json:"value,omitempty"`
}

// OBParameter is one parameter of an OceanBase cluster, set once the
// cluster is bootstrapped and kept set: a value changed by other means is
// set back. Deleting it leaves the value in OceanBase, which has no unset.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obp,categories=steward
// +kubebuilder:validation:XValidation:rule="!has(self.spec.zone) || !has(self.spec.server)",message="set at most one of spec.zone and spec.server"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tenant) || (!has(self.spec.zone) && !has(self.spec.server))",message="a tenant's parameter is set for the tenant: spec.tenant excludes spec.zone and spec.server"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Parameter",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Value",type=string,JSONPath=`.spec.value`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Drifted",type=integer,JSONPath=`.status.drifted`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`,priority=1
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.server`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBParameter struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the parameter; cluster, name and value are required.
	// +required
	Spec OBParameterSpec `json:"spec"`
	// status is the parameter as the servers report it.
	// +optional
	Status OBParameterStatus `json:"status,omitempty"`
}

// OBParameterList is a list of OBParameters.
//
// +kubebuilder:object:root=true
type OBParameterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBParameter `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (p *OBParameter) StatusCore() *commonv1.StatusCore { return &p.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (p *OBParameter) IsPaused() bool { return p.Spec.Paused }
