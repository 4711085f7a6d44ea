package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// BackupJobSpec is one on-demand physical backup of a MatrixOneCluster.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BackupJob's spec is immutable: create another job"
type BackupJobSpec struct {
	// cluster names the MatrixOneCluster to back up, in the job's
	// namespace. The job waits for it to be Ready. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`

	// destination is where the backup is written. Required; immutable.
	// +required
	Destination BackupDestination `json:"destination"`

	// deletionPolicy is the deletionPolicy of the Backup the job records:
	// Retain (default) keeps the backup's objects when the Backup is
	// deleted, Delete deletes them. Immutable here; the Backup's own can
	// change.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy commonv1.ReclaimPolicy `json:"deletionPolicy,omitempty"`

	// timeout bounds how long MatrixOne's BACKUP statement may run before
	// the job fails. Default 2h; immutable.
	// +optional
	// +kubebuilder:default="2h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// BackupDestination is where a backup is written: an S3 store, or a
// volume claim Steward serves over S3.
//
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.volumeClaim)",message="set exactly one of s3 and volumeClaim"
type BackupDestination struct {
	// s3 is a location in an S3-compatible store: the backup is written
	// under "<keyPrefix>/<namespace>/<job name>-<first 8 characters of
	// the job's UID>/", which must hold no object when the job starts. The
	// credentials Secret (its keys AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY) is in the job's namespace. caSecret is
	// refused: MatrixOne 1.2.4's BACKUP statement takes no CA. The bucket
	// must exist. Set exactly one of s3 and volumeClaim. Default: none;
	// immutable.
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`

	// volumeClaim is a PersistentVolumeClaim that holds the backups
	// instead: Steward serves it over S3 with a gateway of its own (a
	// Deployment and Service "<claimName>-s3" running versitygw, keys
	// generated into the Secret "<claimName>-s3-keys"), which runs while a
	// BackupJob or Backup names the claim; the backups are in its bucket
	// "backups", each under "<namespace>/<job name>-<first 8 characters
	// of the job's UID>/". The claim is the user's: Steward never deletes
	// it, and its Secret goes with it. Set exactly one of s3 and
	// volumeClaim. Default: none; immutable.
	// +optional
	VolumeClaim *BackupVolumeClaim `json:"volumeClaim,omitempty"`
}

// BackupVolumeClaim names the volume claim a backup is written to.
type BackupVolumeClaim struct {
	// claimName names the PersistentVolumeClaim, in the job's namespace. It
	// must exist; any access mode does (one pod mounts it), and its
	// volume must keep user extended attributes, where the gateway keeps
	// each object's metadata (ext4 and xfs do). At most 60 characters,
	// beginning with a letter: the gateway's Service is named after it.
	// Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=60
	ClaimName string `json:"claimName"`
}

// BackupJobStatus is the observed state of a BackupJob.
type BackupJobStatus struct {
	// conditions (Ready: the backup is recorded and complete; Synced, and
	// the framework's Paused and OperationFailed), observedGeneration, and
	// operation: the backup flow's steps.
	commonv1.StatusCore `json:",inline"`

	// path is the key prefix, in the destination's bucket, the backup is
	// written under; set when the backup starts.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// startedAt is when the backup pod was created.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the Backup was recorded complete.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// backup names the Backup the job recorded.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup,omitempty"`
}

// BackupJob runs one full physical backup of a MatrixOneCluster on demand
// (MatrixOne's BACKUP statement, from a pod of its own) and records it as
// a Backup of the same name. Jobs of one cluster run one at a time, the
// oldest first.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mobj,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must have at most 52 characters: the backup pod's Job is named after it"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backup`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackupJob struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the cluster and where its backup goes.
	// +required
	Spec BackupJobSpec `json:"spec"`
	// status is the job's progress.
	// +optional
	Status BackupJobStatus `json:"status,omitempty"`
}

// BackupJobList is a list of BackupJobs.
//
// +kubebuilder:object:root=true
type BackupJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupJob `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (j *BackupJob) StatusCore() *commonv1.StatusCore { return &j.Status.StatusCore }

// BackupSpec is a physical backup of a MatrixOneCluster: where its objects
// are.
type BackupSpec struct {
	// cluster is the MatrixOneCluster that was backed up, in the Backup's
	// namespace (it may be gone). Informational. Default: none (a backup
	// recorded by hand may not say); immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable"
	Cluster string `json:"cluster,omitempty"`

	// location is the backup: keyPrefix is the directory MatrixOne's
	// BACKUP wrote (mo_meta, hakeeper/, tae/ below it). Required;
	// immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="location is immutable: it is where the backup is"
	// +kubebuilder:validation:XValidation:rule="size(self.keyPrefix) > 0",message="keyPrefix is required: a backup is a directory, never a bucket's root"
	Location S3Storage `json:"location"`

	// volumeClaim names the PersistentVolumeClaim whose S3 gateway
	// (BackupDestination.volumeClaim) location is: the Backup keeps the
	// gateway running. Default: none (location is a store of its own);
	// immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=60
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeClaim is immutable"
	VolumeClaim string `json:"volumeClaim,omitempty"`

	// deletionPolicy is what happens to the backup's objects when the
	// Backup is deleted: Retain (default) keeps them, Delete deletes every
	// object under location.keyPrefix first. Can change.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy commonv1.ReclaimPolicy `json:"deletionPolicy,omitempty"`
}

// BackupStatus is what the store holds of a Backup, read again on every
// pass.
type BackupStatus struct {
	// conditions (Ready: the backup is complete in the store; Synced, and
	// the framework's), observedGeneration.
	commonv1.StatusCore `json:",inline"`

	// backupTS is MatrixOne's consistent point: the timestamp of the
	// checkpoint the backup ends with, as its tae_sum records it
	// ("<physical>-<logical>"). Every transaction committed before it is
	// in the backup.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	BackupTS string `json:"backupTS,omitempty"`

	// backupTime is when MatrixOne took the backup, as its tae_sum
	// records it (the CN's clock, UTC).
	// +optional
	BackupTime *metav1.Time `json:"backupTime,omitempty"`

	// objects and sizeBytes count the objects under location.keyPrefix
	// and their size.
	// +optional
	Objects int64 `json:"objects,omitempty"`
	// sizeBytes is the size of the backup's objects.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

// Backup is a physical backup of a MatrixOneCluster in an object store,
// recorded by a BackupJob (or created by hand for one written elsewhere).
// Its status says what the store holds, read again on every pass; with
// deletionPolicy Delete, deleting it deletes the backup's objects.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mobk,categories={steward,matrixone}
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Backup-TS",type=string,JSONPath=`.status.backupTS`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.sizeBytes`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.location.bucket`,priority=1
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.location.keyPrefix`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backup struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is where the backup is and what becomes of it on deletion.
	// +required
	Spec BackupSpec `json:"spec"`
	// status is what the store holds of it.
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (b *Backup) StatusCore() *commonv1.StatusCore { return &b.Status.StatusCore }

// BackupScheduleSpec takes a BackupJob (or a Snapshot) of a cluster on a
// cron schedule and keeps the Backups (or Snapshots) as retention says.
//
// +kubebuilder:validation:XValidation:rule="has(self.destination) != has(self.snapshot)",message="set exactly one of destination (physical backups) and snapshot (account snapshots)"
// +kubebuilder:validation:XValidation:rule="has(self.snapshot) == has(oldSelf.snapshot)",message="a schedule takes physical backups or snapshots for life: create another schedule"
type BackupScheduleSpec struct {
	// schedule is when a backup runs, a cron expression in UTC: five
	// fields (minute hour day-of-month month day-of-week) or a
	// descriptor (@hourly, @daily, @weekly, @every 6h). Required; can
	// change (the next run is computed from it).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// suspend stops new runs; a running one finishes, and retention still
	// applies. Default false; can change.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// cluster names the MatrixOneCluster to back up, in the schedule's
	// namespace. Required; can change (the next run backs up the new one).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`

	// destination is where each physical backup is written (see
	// BackupJob). Set exactly one of destination and snapshot. Default:
	// none; can change, but not to snapshot.
	// +optional
	Destination *BackupDestination `json:"destination,omitempty"`

	// snapshot makes each run take a Snapshot of an account instead of a
	// physical backup: the runs are Snapshots, named as the BackupJobs
	// would be, and retention drops the snapshots it does not keep. Set
	// exactly one of destination and snapshot. Default: none; can change,
	// but not to destination.
	// +optional
	Snapshot *ScheduledSnapshot `json:"snapshot,omitempty"`

	// timeout bounds each physical backup (see BackupJob). Default 2h;
	// can change.
	// +optional
	// +kubebuilder:default="2h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// retention says which of the schedule's Backups (or Snapshots) are
	// kept; the others are deleted with their objects (the schedule's
	// Backups have deletionPolicy Delete; a deleted Snapshot drops its
	// snapshot). The newest complete one is always kept. Required; can
	// change.
	// +required
	Retention BackupRetention `json:"retention"`
}

// ScheduledSnapshot is the account a schedule's Snapshots keep.
type ScheduledSnapshot struct {
	// account is the MatrixOne account each Snapshot keeps (see
	// Snapshot). Required; can change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Account string `json:"account"`
}

// BackupRetention bounds the Backups a schedule keeps.
//
// +kubebuilder:validation:XValidation:rule="has(self.count) || has(self.maxAge)",message="set count, maxAge or both: a schedule with no retention keeps every backup forever"
type BackupRetention struct {
	// count is how many of the newest Backups are kept. At least 1.
	// Default: unset (maxAge alone decides); can change.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Count *int32 `json:"count,omitempty"`

	// maxAge is how old a kept Backup may be; more than 0. Default: unset
	// (count alone decides); can change.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupScheduleStatus is the observed state of a BackupSchedule.
type BackupScheduleStatus struct {
	// conditions (Ready: the schedule runs; Synced, and the framework's
	// Paused), observedGeneration.
	commonv1.StatusCore `json:",inline"`

	// lastScheduleTime is the last time a run was due, taken or skipped.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next run is due; unset while
	// suspended.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// active names the BackupJob (or Snapshot) of the schedule that has
	// not finished, if any: a run due meanwhile is skipped.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Active string `json:"active,omitempty"`

	// lastBackup names the newest complete Backup (or taken Snapshot) of
	// the schedule.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastBackup string `json:"lastBackup,omitempty"`

	// backups counts the schedule's Backups (or taken Snapshots) kept.
	// +optional
	Backups int32 `json:"backups,omitempty"`
}

// BackupSchedule takes BackupJobs of a MatrixOneCluster on a cron schedule
// (one at a time: a run due while one runs is skipped, with an Event) and
// deletes the Backups its retention does not keep, with their objects; or,
// with spec.snapshot, takes Snapshots of an account and deletes (drops)
// those its retention does not keep.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mobs,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="metadata.name must have at most 40 characters: its BackupJobs are named after it"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Backups",type=integer,JSONPath=`.status.backups`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackupSchedule struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the schedule, the backups' cluster and destination, and the
	// retention.
	// +required
	Spec BackupScheduleSpec `json:"spec"`
	// status is when it ran and what it keeps.
	// +optional
	Status BackupScheduleStatus `json:"status,omitempty"`
}

// BackupScheduleList is a list of BackupSchedules.
//
// +kubebuilder:object:root=true
type BackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupSchedule `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (s *BackupSchedule) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }
