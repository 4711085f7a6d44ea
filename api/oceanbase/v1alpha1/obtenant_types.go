package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBTenantSpec is the desired state of a tenant of an OceanBase cluster.
// +kubebuilder:validation:XValidation:rule="has(self.source) == has(oldSelf.source)",message="source is immutable"
type OBTenantSpec struct {
	// cluster is the OBCluster, in this namespace, that holds the tenant.
	// Required; immutable. Admission rejects a name no OBCluster has.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable"
	Cluster string `json:"cluster"`

	// tenantName is the tenant's name in OceanBase. Default:
	// metadata.name with '-' replaced by '_'; immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenantName is immutable"
	TenantName string `json:"tenantName,omitempty"`

	// unit is the resource unit each of the tenant's units has (its
	// resource unit config). Required; can change: the config is altered
	// in place.
	// +required
	Unit OBUnitConfig `json:"unit"`

	// unitNum is the number of units in each of the tenant's zones, each
	// on its own server. Default 1; 1 to 16; can change (at most the
	// zone's servers: admission checks it against the cluster).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	UnitNum int32 `json:"unitNum,omitempty"`

	// zones are the zones that hold a full replica of the tenant, each with
	// its own resource pool. Required: zones of the cluster, distinct; can change:
	// the controller adds and removes them one zone at a time, as
	// OceanBase changes a locality.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	Zones []OBTenantZone `json:"zones"`

	// primaryZone is the tenant's primary zone, as OceanBase writes it
	// ("z1;z2,z3", or RANDOM). Default RANDOM; can change.
	// +optional
	// +kubebuilder:default=RANDOM
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(RANDOM|[a-z0-9]+([,;][a-z0-9]+)*)$`
	PrimaryZone string `json:"primaryZone,omitempty"`

	// charset is the tenant's character set. Default utf8mb4; immutable.
	// +optional
	// +kubebuilder:default=utf8mb4
	// +kubebuilder:validation:Enum=utf8mb4;binary;gbk;gb18030;latin1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="charset is immutable"
	Charset string `json:"charset,omitempty"`

	// connectWhiteList is the hosts the tenant accepts connections from
	// (the ob_tcp_invited_nodes variable). Default "%", any; can change.
	// +optional
	// +kubebuilder:default="%"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ConnectWhiteList string `json:"connectWhiteList,omitempty"`

	// variables are global system variables of the tenant and their
	// values (ALTER TENANT ... SET VARIABLES), kept as OceanBase's
	// CDB_OB_SYS_VARIABLES says: a value changed by other means is set
	// back; a variable taken out of the list keeps its value. A standby
	// takes its primary's. Default: none; can change.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Variables []TenantVariable `json:"variables,omitempty"`

	// rootPassword is the Secret (key "password") holding the tenant's root
	// password. Default: <name>-root, generated; immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="rootPassword is immutable"
	RootPassword string `json:"rootPassword,omitempty"`

	// reclaimPolicy says what deleting the OBTenant does to the tenant:
	// Retain keeps it, with its data, its pools and its unit config, and an
	// OBTenant created again with the same tenantName takes it over; Delete
	// drops it (DROP TENANT ... FORCE) and its pools and unit config.
	// Default Retain; can change.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy commonv1.ReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// source says where a new tenant's data comes from. Unset, the
	// tenant starts empty (CREATE TENANT); restore makes it from backups
	// (an OBTenantRestore runs the restore); primary makes it a standby
	// of another tenant. A tenant that already exists in OceanBase is
	// never restored over: the OBTenant waits with Ready=False
	// (TenantExists). Default: unset; immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable"
	Source *OBTenantSource `json:"source,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// OBTenantSource is where a new tenant's data comes from.
// +kubebuilder:validation:XValidation:rule="has(self.restore) != has(self.primary)",message="set exactly one of restore and primary"
type OBTenantSource struct {
	// restore restores the tenant from the backups an
	// OBTenantBackupPolicy took of another tenant (or of an earlier one
	// of the same name). The restored tenant keeps the users of its
	// backup: spec.rootPassword must name a Secret that exists and holds
	// the backed-up tenant's root password. Default: unset; immutable.
	// +optional
	Restore *OBTenantRestoreSource `json:"restore,omitempty"`

	// primary makes the tenant a standby of another OBTenant's tenant, on
	// this cluster or another: OceanBase's CREATE STANDBY TENANT with
	// LOG_RESTORE_SOURCE naming the primary's observers and a read-only
	// user of the primary (standbyro, its password in the Secret
	// <primary>-standbyro, generated), replaying the primary's log for
	// ever. The standby keeps the primary's users: spec.rootPassword
	// must name a Secret that exists and holds the primary's root
	// password. An OBTenantOperation switches the roles over or activates
	// the standby. Default: unset; immutable.
	// +optional
	Primary *OBTenantPrimarySource `json:"primary,omitempty"`
}

// OBTenantPrimarySource is the tenant a standby follows.
type OBTenantPrimarySource struct {
	// tenant is the OBTenant, in this namespace, whose tenant the standby
	// follows. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tenant string `json:"tenant"`
}

// TenantVariable is a global system variable of a tenant.
type TenantVariable struct {
	// name is the variable's name, as OceanBase spells it; not
	// ob_tcp_invited_nodes, which connectWhiteList sets. Required; a name
	// cannot change (another name is another variable).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self != 'ob_tcp_invited_nodes'",message="ob_tcp_invited_nodes is spec.connectWhiteList"
	Name string `json:"name"`

	// value is the variable's value, as OceanBase shows it (a number is
	// sent as a number). Required; can change.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`
}

// OBUnitConfig is a resource unit config.
type OBUnitConfig struct {
	// maxCPU is each unit's CPU limit (MAX_CPU). Required; can change.
	// +required
	MaxCPU resource.Quantity `json:"maxCPU"`
	// minCPU is each unit's guaranteed CPU (MIN_CPU). Default maxCPU; can
	// change.
	// +optional
	MinCPU *resource.Quantity `json:"minCPU,omitempty"`
	// memorySize is each unit's memory (MEMORY_SIZE); OceanBase refuses
	// less than its __min_full_resource_pool_memory (5Gi by default).
	// Required; can change.
	// +required
	MemorySize resource.Quantity `json:"memorySize"`
	// logDiskSize is each unit's log disk (LOG_DISK_SIZE). Default: unset,
	// OceanBase's (three times memorySize); can change.
	// +optional
	LogDiskSize *resource.Quantity `json:"logDiskSize,omitempty"`
}

// OBTenantZone is one zone of a tenant.
type OBTenantZone struct {
	// name is a zone of the cluster. Required; a zone renamed is another
	// zone (one removed, one added): a name cannot change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
}

// OBTenantStatus is the observed state of a tenant.
type OBTenantStatus struct {
	// conditions (Ready, Synced, and the framework's Paused,
	// DependenciesReady and OperationFailed), observedGeneration, and
	// operation, the running or last task flow (create, zones).
	commonv1.StatusCore `json:",inline"`

	// tenantID is the tenant's id in OceanBase.
	// +optional
	TenantID int64 `json:"tenantID,omitempty"`

	// tenantStatus is DBA_OB_TENANTS.STATUS (CREATING, NORMAL, DROPPING);
	// empty when OceanBase has no such tenant.
	// +optional
	TenantStatus string `json:"tenantStatus,omitempty"`

	// locality is the tenant's locality as OceanBase reports it.
	// +optional
	Locality string `json:"locality,omitempty"`

	// primaryZone is the tenant's primary zone as OceanBase reports it.
	// +optional
	PrimaryZone string `json:"primaryZone,omitempty"`

	// pools are the tenant's resource pools and their units.
	// +optional
	// +listType=map
	// +listMapKey=name
	Pools []OBPoolStatus `json:"pools,omitempty"`

	// connectWhiteList is the allowlist last set.
	// +optional
	ConnectWhiteList string `json:"connectWhiteList,omitempty"`

	// tenantRole is the tenant's role as OceanBase reports it
	// (DBA_OB_TENANTS.TENANT_ROLE): PRIMARY, STANDBY, or RESTORE while it
	// is being restored.
	// +optional
	TenantRole string `json:"tenantRole,omitempty"`
}

// OBPoolStatus is a resource pool of a tenant.
type OBPoolStatus struct {
	// name is the pool's name.
	// +required
	Name string `json:"name"`
	// zones are the pool's zones.
	// +optional
	// +listType=atomic
	Zones []string `json:"zones,omitempty"`
	// unitNum is the pool's units per zone.
	// +optional
	UnitNum int32 `json:"unitNum,omitempty"`
	// activeUnits counts the pool's units OceanBase reports ACTIVE.
	// +optional
	ActiveUnits int32 `json:"activeUnits,omitempty"`
}

// OBTenant is a tenant of an OceanBase cluster: its unit config, a resource
// pool per zone, its locality, and its root password.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obt,categories=steward
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.status.tenantStatus`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.tenantRole`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Locality",type=string,JSONPath=`.status.locality`,priority=1
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBTenant struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired tenant; cluster, unit and zones are required.
	// +required
	Spec OBTenantSpec `json:"spec"`
	// status is the observed tenant.
	// +optional
	Status OBTenantStatus `json:"status,omitempty"`
}

// OBTenantList is a list of OBTenants.
//
// +kubebuilder:object:root=true
type OBTenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBTenant `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (t *OBTenant) StatusCore() *commonv1.StatusCore { return &t.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (t *OBTenant) IsPaused() bool { return t.Spec.Paused }
