package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OBTenantBackupPolicySpec is how one tenant's data is protected: its log
// archived without a gap, full and incremental backups on schedules, and
// what OceanBase may delete.
// +kubebuilder:validation:XValidation:rule="!has(self.dataBackup.incrementalSchedule) || self.dataBackup.incrementalSchedule != self.dataBackup.fullSchedule",message="dataBackup.incrementalSchedule must differ from fullSchedule"
type OBTenantBackupPolicySpec struct {
	// tenant is the OBTenant, in this namespace, whose tenant this policy
	// protects; one policy per tenant. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenant is immutable"
	Tenant string `json:"tenant"`

	// archive is where the tenant's log is archived (LOG_ARCHIVE_DEST).
	// Archiving runs while the policy is not suspended: every committed
	// transaction reaches the destination within seconds, which is what
	// a restore to a point in time replays. Required; can change:
	// OceanBase refuses a new destination while it archives, so the
	// controller stops archiving (NOARCHIVELOG), sets it and starts again,
	// a flow in status.operation.
	// +required
	Archive LogArchiveSpec `json:"archive"`

	// dataBackup is where backup sets go (DATA_BACKUP_DEST) and when they
	// are taken. Required; can change (between two backups).
	// +required
	DataBackup DataBackupSpec `json:"dataBackup"`

	// recoveryWindow is how far back the tenant stays restorable: OceanBase's
	// delete policy (ADD DELETE BACKUP POLICY 'default' RECOVERY_WINDOW)
	// lets it delete the backup sets and archive pieces no restore within
	// the window needs. Days, as OceanBase writes them ("7d"). Default
	// "7d"; can change.
	// +optional
	// +kubebuilder:default="7d"
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,3}d$`
	RecoveryWindow string `json:"recoveryWindow,omitempty"`

	// backupsKept is how many finished OBTenantBackups the schedules keep
	// (the newest; the backup sets themselves are OceanBase's, deleted by
	// its delete policy, not by deleting these records). Default 10; 1 to
	// 100; can change.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	BackupsKept int32 `json:"backupsKept,omitempty"`

	// suspend defers archiving (LOG_ARCHIVE_DEST_STATE = 'DEFER': the log
	// waits on the servers, no gap) and takes no scheduled backup, until
	// it is false again. Default false; can change.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// paused stops reconciliation (status still reports Paused). Default
	// false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// LogArchiveSpec is a tenant's log archive.
type LogArchiveSpec struct {
	// destination is where the archive goes. Required; can change (see
	// archive).
	// +required
	Destination BackupDestination `json:"destination"`

	// pieceSwitchInterval is how often OceanBase starts a new archive
	// piece (PIECE_SWITCH_INTERVAL), 1 to 7 days. Default "1d"; can change
	// (as the destination).
	// +optional
	// +kubebuilder:default="1d"
	// +kubebuilder:validation:Pattern=`^[1-7]d$`
	PieceSwitchInterval string `json:"pieceSwitchInterval,omitempty"`

	// binding is OceanBase's BINDING: Optional lets transactions commit
	// while the archive falls behind; Mandatory makes them wait for it.
	// Default Optional; can change (as the destination).
	// +optional
	// +kubebuilder:default=Optional
	// +kubebuilder:validation:Enum=Optional;Mandatory
	Binding string `json:"binding,omitempty"`
}

// DataBackupSpec is where and when a tenant's data is backed up.
type DataBackupSpec struct {
	// destination is where backup sets go. Required; can change.
	// +required
	Destination BackupDestination `json:"destination"`

	// fullSchedule is when full backups are taken, as a CronJob's schedule
	// ("0 1 * * 0", "@daily", "@every 12h"), in UTC. Required; can
	// change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	FullSchedule string `json:"fullSchedule"`

	// incrementalSchedule is when incremental backups are taken, each of
	// what changed since the backup before it. A run due while a full one
	// runs (or before the first full one completed) is skipped. Default:
	// none; can change.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	IncrementalSchedule string `json:"incrementalSchedule,omitempty"`

	// plusArchivelog takes the scheduled backups with PLUS ARCHIVELOG
	// (OBTenantBackup's plusArchivelog). Default false; can change: the
	// backups taken after take it.
	// +optional
	PlusArchivelog bool `json:"plusArchivelog,omitempty"`

	// encryptionSecret is a Secret, in this namespace, whose key
	// "password" encrypts the scheduled backups (OBTenantBackup's
	// encryptionSecret): a restore of them needs the password
	// (source.decryptionSecret). Default: none, backups are not
	// encrypted; can change: the backups taken after use the new one.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	EncryptionSecret string `json:"encryptionSecret,omitempty"`
}

// BackupDestination is a place OceanBase writes backups or archives to:
// a directory every observer mounts (NFS) or an S3-compatible bucket.
// +kubebuilder:validation:XValidation:rule="self.path.startsWith('s3://') == has(self.s3)",message="s3 is set exactly when path is an s3:// path"
type BackupDestination struct {
	// path is the destination: file:///dir (a directory mounted at the
	// same place on every observer) or s3://bucket/prefix. Two
	// destinations of one policy must differ. Required; can change (see
	// the policy's fields).
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(file:///|s3://)[^?&\s]+$`
	Path string `json:"path"`

	// s3 is how OceanBase reaches an s3:// path. Required with one, and
	// only then; default: none; can change.
	// +optional
	S3 *BackupS3 `json:"s3,omitempty"`
}

// BackupS3 is how OceanBase reaches an S3-compatible bucket. It writes
// the host, the region and the keys into the destination it is given
// (OceanBase keeps them, encrypted, in its backup parameters).
type BackupS3 struct {
	// endpoint is the store's host[:port] (OceanBase's host=), for example
	// "versitygw.storage.svc:7070", or with a scheme,
	// "https://s3.us-east-1.amazonaws.com": OceanBase 4.x's S3 client
	// reaches a host without one over plain HTTP. Required; can change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(https?://)?[^/?&\s]+$`
	Endpoint string `json:"endpoint"`

	// region is the bucket's region (s3_region=). Required; can change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[^/?&\s]+$`
	Region string `json:"region"`

	// pathStyle puts the bucket in the URL's path instead of the host name
	// (OceanBase's addressing_model=path_style), as stores inside a
	// cluster need (versitygw, MinIO, Ceph's RGW): no DNS name resolves
	// bucket.host there. Default false; can change.
	// +optional
	PathStyle bool `json:"pathStyle,omitempty"`

	// credentialsSecret names a Secret in this namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (as MatrixOne's
	// BucketClaim). Required; can change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret"`
}

// Archive round statuses (DBA_OB_ARCHIVELOG.STATUS) the policy reads.
const (
	ArchiveDoing       = "DOING"
	ArchiveBeginning   = "BEGINNING"
	ArchiveSuspend     = "SUSPEND"
	ArchiveStop        = "STOP"
	ArchiveInterrupted = "INTERRUPTED"
)

// OBTenantBackupPolicyStatus is what OceanBase says of the tenant's
// archive and backups.
type OBTenantBackupPolicyStatus struct {
	// conditions (Ready: archiving as the spec says, the destinations and
	// the delete policy set; Synced, and the framework's Paused,
	// DependenciesReady and OperationFailed), observedGeneration, and
	// operation: the destination change flow.
	commonv1.StatusCore `json:",inline"`

	// logMode is the tenant's DBA_OB_TENANTS.LOG_MODE: ARCHIVELOG or
	// NOARCHIVELOG.
	// +optional
	LogMode string `json:"logMode,omitempty"`

	// archive is the tenant's latest archive round; absent before the
	// first.
	// +optional
	Archive *ArchiveStatus `json:"archive,omitempty"`

	// dataBackupDest is the data backup destination OceanBase holds
	// (without its query: no keys), empty when none.
	// +optional
	DataBackupDest string `json:"dataBackupDest,omitempty"`

	// recoveryWindow is the delete policy OceanBase holds, empty when none.
	// +optional
	RecoveryWindow string `json:"recoveryWindow,omitempty"`

	// lastFullScheduleTime is the full backups' run last taken (or
	// skipped).
	// +optional
	LastFullScheduleTime *metav1.Time `json:"lastFullScheduleTime,omitempty"`
	// lastIncrementalScheduleTime is the incremental backups' run last
	// taken (or skipped).
	// +optional
	LastIncrementalScheduleTime *metav1.Time `json:"lastIncrementalScheduleTime,omitempty"`

	// nextFullScheduleTime is when the full backups' schedule runs next;
	// absent while suspended.
	// +optional
	NextFullScheduleTime *metav1.Time `json:"nextFullScheduleTime,omitempty"`
	// nextIncrementalScheduleTime is when the incremental backups'
	// schedule runs next; absent while suspended or without one.
	// +optional
	NextIncrementalScheduleTime *metav1.Time `json:"nextIncrementalScheduleTime,omitempty"`

	// lastFullBackup names the newest full OBTenantBackup of the policy
	// that completed.
	// +optional
	LastFullBackup string `json:"lastFullBackup,omitempty"`
	// lastIncrementalBackup names the newest incremental OBTenantBackup
	// of the policy that completed.
	// +optional
	LastIncrementalBackup string `json:"lastIncrementalBackup,omitempty"`

	// activeBackup names the policy's OBTenantBackup that has not
	// finished, empty when none.
	// +optional
	ActiveBackup string `json:"activeBackup,omitempty"`
}

// ArchiveStatus is a row of DBA_OB_ARCHIVELOG: one archive round.
type ArchiveStatus struct {
	// roundID is the round's id.
	// +optional
	RoundID int64 `json:"roundID,omitempty"`
	// status is the round's status: BEGINNING, DOING, SUSPEND,
	// INTERRUPTED, STOP, ...
	// +optional
	Status string `json:"status,omitempty"`
	// path is the round's destination (without keys).
	// +optional
	Path string `json:"path,omitempty"`
	// startSCN is where the round began.
	// +optional
	StartSCN int64 `json:"startSCN,omitempty"`
	// checkpointSCN is how far the round has archived: every transaction
	// committed at or before it is in the archive. OceanBase's moves on
	// every second; status shows it again once it moved 5 minutes past
	// the one shown (or the round or its status changed), so an idle
	// policy writes nothing meanwhile. CDB_OB_ARCHIVELOG has the latest.
	// +optional
	CheckpointSCN int64 `json:"checkpointSCN,omitempty"`
	// checkpointTime is checkpointSCN as a time.
	// +optional
	CheckpointTime *metav1.Time `json:"checkpointTime,omitempty"`
}

// OBTenantBackupPolicy archives a tenant's log and takes its full and
// incremental backups on schedules (as OBTenantBackups), with OceanBase's
// delete policy keeping the recovery window.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obbp,categories=steward
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name="Archive",type=string,JSONPath=`.status.archive.status`
// +kubebuilder:printcolumn:name="Checkpoint",type=date,JSONPath=`.status.archive.checkpointTime`
// +kubebuilder:printcolumn:name="Last-Full",type=string,JSONPath=`.status.lastFullBackup`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Next-Full",type=string,JSONPath=`.status.nextFullScheduleTime`,priority=1
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OBTenantBackupPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy; tenant, archive and dataBackup are required.
	// +required
	Spec OBTenantBackupPolicySpec `json:"spec"`
	// status is what OceanBase says of the archive and the backups.
	// +optional
	Status OBTenantBackupPolicyStatus `json:"status,omitempty"`
}

// OBTenantBackupPolicyList is a list of OBTenantBackupPolicies.
//
// +kubebuilder:object:root=true
type OBTenantBackupPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OBTenantBackupPolicy `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (p *OBTenantBackupPolicy) StatusCore() *commonv1.StatusCore { return &p.Status.StatusCore }

// IsPaused reports spec.paused (framework.Pausable).
func (p *OBTenantBackupPolicy) IsPaused() bool { return p.Spec.Paused }
