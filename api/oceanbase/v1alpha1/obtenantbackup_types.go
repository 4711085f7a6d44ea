package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Backup types (OBTenantBackup's spec.type).
const (
	BackupFull        = "Full"
	BackupIncremental = "Incremental"
)

// Backup job statuses (DBA_OB_BACKUP_JOBS.STATUS) the backups read.
const (
	BackupJobInit      = "INIT"
	BackupJobDoing     = "DOING"
	BackupJobCompleted = "COMPLETED"
	BackupJobFailed    = "FAILED"
	BackupJobCanceling = "CANCELING"
	BackupJobCanceled  = "CANCELED"
)

// OBTenantBackupSpec is one data backup of a tenant: a record of what was
// done, so its tenant and type cannot change.
// +kubebuilder:validation:XValidation:rule="(has(self.plusArchivelog) && self.plusArchivelog) == (has(oldSelf.plusArchivelog) && oldSelf.plusArchivelog)",message="plusArchivelog is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.encryptionSecret) == has(oldSelf.encryptionSecret) && (!has(self.encryptionSecret) || self.encryptionSecret == oldSelf.encryptionSecret)",message="encryptionSecret is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",message="a canceled backup stays canceled"
type OBTenantBackupSpec struct {
	// tenant is the OBTenant, in this namespace, to back up. Its tenant
	// must archive its log to a destination and have a data backup
	// destination (an OBTenantBackupPolicy sets both): OceanBase refuses a
	// backup otherwise. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenant is immutable"
	Tenant string `json:"tenant"`

	// type is Full (ALTER SYSTEM BACKUP DATABASE) or Incremental (BACKUP
	// INCREMENTAL DATABASE: what changed since the last backup set; it
	// needs a full one before it). Default Full; immutable.
	// +optional
	// +kubebuilder:default=Full
	// +kubebuilder:validation:Enum=Full;Incremental
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type string `json:"type,omitempty"`

	// plusArchivelog makes the backup set carry the archive pieces its
	// restore needs (BACKUP DATABASE PLUS ARCHIVELOG): it restores to its
	// own end without the archive destination. Default false; immutable.
	// +optional
	PlusArchivelog bool `json:"plusArchivelog,omitempty"`

	// encryptionSecret is a Secret, in this namespace, whose key
	// "password" encrypts the backup set (SET ENCRYPTION ON IDENTIFIED BY
	// ... ONLY before the backup starts); a restore of it needs the
	// password. Default: none, not encrypted; immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	EncryptionSecret string `json:"encryptionSecret,omitempty"`

	// cancel cancels the backup: a job OceanBase runs for it is canceled
	// (ALTER SYSTEM CANCEL BACKUP; it ends CANCELED), and one not started
	// yet is never started. Default false; can change from false to true
	// only.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// OBTenantBackupStatus is the backup job as OceanBase reports it
// (DBA_OB_BACKUP_JOBS, then its history).
type OBTenantBackupStatus struct {
	// conditions (Ready: the backup completed; Synced, and the
	// framework's Paused and OperationFailed), observedGeneration, and
	// operation: the backup flow's steps.
	commonv1.StatusCore `json:",inline"`

	// requestedAt is when the controller decided to send the backup
	// statement, written before it is sent: a manager that restarts
	// finds the job OceanBase started at or after it instead of starting
	// another.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`

	// jobID is OceanBase's backup job id.
	// +optional
	JobID int64 `json:"jobID,omitempty"`

	// jobStatus is the job's status: INIT, DOING, COMPLETED, FAILED,
	// CANCELING, CANCELED.
	// +optional
	JobStatus string `json:"jobStatus,omitempty"`

	// backupSetID is the backup set the job wrote.
	// +optional
	BackupSetID int64 `json:"backupSetID,omitempty"`

	// path is the data backup destination the job wrote to (without
	// keys).
	// +optional
	Path string `json:"path,omitempty"`

	// startedAt is the job's start, as OceanBase reports it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// completedAt is the job's end, as OceanBase reports it.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// result is OceanBase's result code and comment of a job that did not
	// complete.
	// +optional
	Result string `json:"result,omitempty"`
}

// OBTenantBackup is one full or incremental backup of a tenant, taken by
// an OBTenantBackupPolicy's schedule or created by a user.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obbk,categories=steward
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobStatus`
// +kubebuilder:printcolumn:name="Set",type=integer,JSONPath=`.status.backupSetID`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completedAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBTenantBackup struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the backup; tenant is required.
	// +required
	Spec OBTenantBackupSpec `json:"spec"`
	// status is the backup job as OceanBase reports it.
	// +optional
	Status OBTenantBackupStatus `json:"status,omitempty"`
}

// OBTenantBackupList is a list of OBTenantBackups.
//
// +kubebuilder:object:root=true
type OBTenantBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBTenantBackup `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (b *OBTenantBackup) StatusCore() *commonv1.StatusCore { return &b.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (b *OBTenantBackup) IsPaused() bool { return b.Spec.Paused }
