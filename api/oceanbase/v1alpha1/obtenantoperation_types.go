package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Tenant operations (OBTenantOperation's spec.type).
const (
	OperationSwitchover     = "Switchover"
	OperationFailover       = "Failover"
	OperationChangePassword = "ChangePassword"
	OperationReplayLog      = "ReplayLog"
	OperationUpgrade        = "Upgrade"
)

// OBTenantOperationSpec is one operation on tenants: a record of what was
// asked, so none of it can change.
// +kubebuilder:validation:XValidation:rule="has(self.switchover) == (self.type == 'Switchover') && has(self.failover) == (self.type == 'Failover') && has(self.changePassword) == (self.type == 'ChangePassword') && has(self.replayLog) == (self.type == 'ReplayLog') && has(self.upgrade) == (self.type == 'Upgrade')",message="set the field of the operation's type, and only it"
type OBTenantOperationSpec struct {
	// type is the operation: Switchover (a primary and its standby swap
	// roles), Failover (a standby becomes the primary at once), ChangePassword
	// (a tenant's root password), ReplayLog (how far a standby replays),
	// Upgrade (a tenant's data version up to its observers' version).
	// Required; immutable.
	// +required
	// +kubebuilder:validation:Enum=Switchover;Failover;ChangePassword;ReplayLog;Upgrade
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	Type string `json:"type"`

	// switchover names the primary and the standby that swap roles. Required
	// with type Switchover, and only then (Default: none); immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	Switchover *SwitchoverSpec `json:"switchover,omitempty"`

	// failover names the standby to activate. Required with type Failover,
	// and only then (Default: none); immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	Failover *FailoverSpec `json:"failover,omitempty"`

	// changePassword names the tenant and the Secret with its new root
	// password. Required with type ChangePassword, and only then
	// (Default: none); immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	ChangePassword *ChangePasswordSpec `json:"changePassword,omitempty"`

	// replayLog names the standby and how far it replays. Required with
	// type ReplayLog, and only then (Default: none); immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	ReplayLog *ReplayLogSpec `json:"replayLog,omitempty"`

	// upgrade names the tenant whose data version to upgrade. Required
	// with type Upgrade, and only then (Default: none); immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an operation is immutable"
	Upgrade *UpgradeTenantSpec `json:"upgrade,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// SwitchoverSpec is a switchover: the primary becomes a standby of the
// standby, which becomes the primary, with no committed transaction lost.
type SwitchoverSpec struct {
	// primary is the OBTenant whose tenant is the primary. Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Primary string `json:"primary"`

	// standby is the OBTenant whose tenant follows it (its
	// spec.source.primary names primary). Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Standby string `json:"standby"`
}

// FailoverSpec is a failover: the standby becomes a primary with what it
// has replayed, whatever its primary's state.
type FailoverSpec struct {
	// standby is the OBTenant whose tenant to activate; its tenant must
	// be a STANDBY. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Standby string `json:"standby"`
}

// ChangePasswordSpec is a change of a tenant's root password.
type ChangePasswordSpec struct {
	// tenant is the OBTenant whose tenant's root password changes; its
	// tenant must be a PRIMARY (a standby's users are its primary's).
	// Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tenant string `json:"tenant"`

	// secret is a Secret, in this namespace, whose key "password" is the
	// new password. Once OceanBase took it, the controller writes it into
	// the OBTenant's rootPassword Secret. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Secret string `json:"secret"`
}

// ReplayLogSpec is how far a standby replays its primary's log.
type ReplayLogSpec struct {
	// tenant is the OBTenant whose tenant is the standby. Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tenant string `json:"tenant"`

	// until is where replay stops (ALTER SYSTEM RECOVER STANDBY TENANT
	// ... UNTIL SCN); OceanBase refuses a point the standby has replayed
	// past. Default: unset, replay without end (UNTIL UNLIMITED);
	// immutable.
	// +optional
	Until *RestorePoint `json:"until,omitempty"`
}

// UpgradeTenantSpec is an upgrade of a tenant's data version (its
// `compatible` parameter) to the version its cluster's observers run: after
// the cluster's image was upgraded, or for a tenant restored from an older
// version's backup. It runs ALTER SYSTEM RUN UPGRADE JOB "UPGRADE_ALL"
// TENANT = <tenant> and waits until the tenant's compatible is the
// observers' version.
type UpgradeTenantSpec struct {
	// tenant is the OBTenant whose tenant to upgrade; its tenant must be a
	// PRIMARY (a standby's data version follows its primary's log).
	// Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tenant string `json:"tenant"`
}

// OBTenantOperationStatus is how the operation went.
type OBTenantOperationStatus struct {
	// conditions (Ready: the operation succeeded; Synced, and the
	// framework's Paused, DependenciesReady and OperationFailed),
	// observedGeneration, and operation: the operation's flow and its
	// steps.
	commonv1.StatusCore `json:",inline"`

	// completedAt is when the operation succeeded.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// OBTenantOperation is one operation on tenants (a switchover, a failover,
// a root password change, a standby's replay point, a tenant upgrade), run
// once as a flow.
// One operation at a time per tenant: admission refuses one that names a
// tenant another unfinished operation names.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obtop,categories=steward
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completedAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBTenantOperation struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the operation; type and its field are required.
	// +required
	Spec OBTenantOperationSpec `json:"spec"`
	// status is how the operation went.
	// +optional
	Status OBTenantOperationStatus `json:"status,omitempty"`
}

// OBTenantOperationList is a list of OBTenantOperations.
//
// +kubebuilder:object:root=true
type OBTenantOperationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBTenantOperation `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (o *OBTenantOperation) StatusCore() *commonv1.StatusCore { return &o.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (o *OBTenantOperation) IsPaused() bool { return o.Spec.Paused }

// Tenants returns the OBTenants the operation names.
func (o *OBTenantOperation) Tenants() []string {
	s := o.Spec
	switch {
	case s.Switchover != nil:
		return []string{s.Switchover.Primary, s.Switchover.Standby}
	case s.Failover != nil:
		return []string{s.Failover.Standby}
	case s.ChangePassword != nil:
		return []string{s.ChangePassword.Tenant}
	case s.ReplayLog != nil:
		return []string{s.ReplayLog.Tenant}
	case s.Upgrade != nil:
		return []string{s.Upgrade.Tenant}
	}
	return nil
}
