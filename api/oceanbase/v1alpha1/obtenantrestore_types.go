package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Roles a restored tenant takes (OBTenantRestoreSource.role), and the
// roles OceanBase reports (DBA_OB_TENANTS.TENANT_ROLE).
const (
	RestoreAsPrimary = "Primary"
	RestoreAsStandby = "Standby"

	TenantRolePrimary = "PRIMARY"
	TenantRoleStandby = "STANDBY"
	TenantRoleRestore = "RESTORE"
)

// Restore job statuses: OceanBase's CDB_OB_RESTORE_HISTORY.STATUS of a
// finished job (a running one has a step of its own in
// CDB_OB_RESTORE_PROGRESS).
const (
	RestoreSucceeded = "SUCCESS"
	RestoreFailed    = "FAIL"
)

// OBTenantRestoreSource is where a restored tenant's data comes from: the
// destinations an OBTenantBackupPolicy archived and backed a tenant up
// to, and how far to replay.
// +kubebuilder:validation:XValidation:rule="!has(self.replayArchive) || !self.replayArchive || (has(self.role) && self.role == 'Standby')",message="replayArchive needs role Standby"
type OBTenantRestoreSource struct {
	// data is the data backup destination holding the backup sets (a
	// policy's dataBackup.destination). Required; immutable.
	// +required
	Data BackupDestination `json:"data"`

	// archive is the log archive destination (a policy's
	// archive.destination): the restore replays it from the backup set
	// up to the restore point. Required; immutable.
	// +required
	Archive BackupDestination `json:"archive"`

	// until is the restore point: the tenant holds exactly the
	// transactions committed at or before it. Default: unset, as far as
	// the archive reaches (its checkpoint); immutable.
	// +optional
	Until *RestorePoint `json:"until,omitempty"`

	// role is what the tenant is once restored: Primary (OceanBase's
	// ACTIVATE STANDBY TENANT makes it writable) or Standby (it stays a
	// read-only standby at the restore point, to be activated later).
	// Default Primary; immutable.
	// +optional
	// +kubebuilder:default=Primary
	// +kubebuilder:validation:Enum=Primary;Standby
	Role string `json:"role,omitempty"`

	// decryptionSecret is a Secret, in this namespace, whose keys
	// "password" (and "password2", "password3"... for sets encrypted with
	// other passwords) open encrypted backup sets (SET DECRYPTION
	// IDENTIFIED BY before the restore); OceanBase fails a restore that
	// reads a set none opens. Default: none, the sets are not encrypted;
	// immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DecryptionSecret string `json:"decryptionSecret,omitempty"`

	// replayArchive keeps a restored standby (role Standby only)
	// replaying the archive after its restore: its LOG_RESTORE_SOURCE
	// becomes the archive destination (LOCATION=...) and its recovery
	// UNLIMITED, so it follows the archive as the source tenant's
	// archiving writes it, read-only, until activated (an
	// OBTenantOperation Failover). Default false; immutable.
	// +optional
	ReplayArchive bool `json:"replayArchive,omitempty"`
}

// RestorePoint is a point in a tenant's history: a time or an SCN.
// +kubebuilder:validation:XValidation:rule="has(self.time) != has(self.scn)",message="exactly one of time and scn"
type RestorePoint struct {
	// time is the point as an RFC 3339 time ("2026-11-28T10:00:00.5Z").
	// The controller sends it as the SCN OceanBase gives that time
	// (nanoseconds since the epoch, as its TIMESTAMP_TO_SCN), so no time
	// zone is involved. Default: unset; immutable.
	// +optional
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:MaxLength=64
	Time string `json:"time,omitempty"`

	// scn is the point as an OceanBase SCN. Default: unset; immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SCN int64 `json:"scn,omitempty"`
}

// OBTenantRestoreSpec is one physical restore of a tenant: a record of
// what was done, so none of it can change.
// +kubebuilder:validation:XValidation:rule="self.tenant == oldSelf.tenant && self.source == oldSelf.source",message="tenant and source are immutable"
type OBTenantRestoreSpec struct {
	// tenant is the OBTenant, in this namespace, the restore makes: its
	// cluster, tenantName, unit config, pools and primary zone are the
	// new tenant's. The OBTenant's controller creates this object from
	// its spec.source.restore once the tenant's pools exist. Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tenant string `json:"tenant"`

	// source is where the data comes from. Required; immutable.
	// +required
	Source OBTenantRestoreSource `json:"source"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// OBTenantRestoreStatus is the restore job as OceanBase reports it
// (CDB_OB_RESTORE_PROGRESS, then CDB_OB_RESTORE_HISTORY).
type OBTenantRestoreStatus struct {
	// conditions (Ready: the tenant is restored, and activated when its
	// role is Primary; Synced, and the framework's Paused, DependenciesReady
	// and OperationFailed), observedGeneration, and operation.
	commonv1.StatusCore `json:",inline"`

	// jobID is OceanBase's restore job id.
	// +optional
	JobID int64 `json:"jobID,omitempty"`

	// jobStatus is the job's status: its step while it runs (as
	// CDB_OB_RESTORE_PROGRESS says), SUCCESS or FAIL once it ended.
	// +optional
	JobStatus string `json:"jobStatus,omitempty"`

	// restoreSCN is the point the tenant was restored to.
	// +optional
	RestoreSCN int64 `json:"restoreSCN,omitempty"`

	// restoreTime is restoreSCN as a time.
	// +optional
	RestoreTime *metav1.Time `json:"restoreTime,omitempty"`

	// backupSets are the backup sets the restore read, as OceanBase lists
	// them.
	// +optional
	BackupSets string `json:"backupSets,omitempty"`

	// backupTenant is the name of the tenant the backups were taken of.
	// +optional
	BackupTenant string `json:"backupTenant,omitempty"`

	// tenantRole is the restored tenant's role (DBA_OB_TENANTS.TENANT_ROLE):
	// RESTORE while it runs, then STANDBY, then PRIMARY once activated.
	// +optional
	TenantRole string `json:"tenantRole,omitempty"`

	// replayingArchive is true once a restore with replayArchive pointed
	// the standby at the archive with recovery UNLIMITED. A record, as
	// the rest of a finished restore's status: the OBTenant's status says
	// the tenant's role now.
	// +optional
	ReplayingArchive bool `json:"replayingArchive,omitempty"`

	// startedAt is the job's start, as OceanBase reports it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// finishedAt is the job's end, as OceanBase reports it.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// result is OceanBase's reason for a job that failed.
	// +optional
	Result string `json:"result,omitempty"`
}

// OBTenantRestore is one physical restore of a tenant from its backups into
// a new tenant (ALTER SYSTEM RESTORE ... UNTIL), created by the OBTenant
// controller for an OBTenant whose spec.source.restore is set.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obtr,categories=steward
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobStatus`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.tenantRole`
// +kubebuilder:printcolumn:name="Restored-To",type=string,JSONPath=`.status.restoreTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBTenantRestore struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the restore; tenant and source are required.
	// +required
	Spec OBTenantRestoreSpec `json:"spec"`
	// status is the restore job as OceanBase reports it.
	// +optional
	Status OBTenantRestoreStatus `json:"status,omitempty"`
}

// OBTenantRestoreList is a list of OBTenantRestores.
//
// +kubebuilder:object:root=true
type OBTenantRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBTenantRestore `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (r *OBTenantRestore) StatusCore() *commonv1.StatusCore { return &r.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (r *OBTenantRestore) IsPaused() bool { return r.Spec.Paused }
