package v1alpha1

// Reasons that only MatrixOne's kinds use, next to the shared ones in
// api/common. Users read them in status.conditions, in kubectl get's Reason
// column and in kubectl get events; docs/matrixone.md says what each means.
// They are API: renaming one breaks whoever matches on it.

// Reasons of the MatrixOneCluster's conditions.
const (
	// ReasonSetsNotReady: a set the cluster made is not Ready (the message
	// names the first, in the rollout order, and why).
	ReasonSetsNotReady = "SetsNotReady"
	// ReasonRollingOut: a change waits for the sets before it in the
	// rollout order (log service, CN groups, TN, proxy) to be Ready.
	ReasonRollingOut = "RollingOut"
	// ReasonDowngradeRefused: spec.image would give a CN group an older
	// MatrixOne version than it was given (its CNs may have upgraded the
	// cluster's catalog), so the group keeps its version and the change
	// goes no further. Admission refuses such a change; this is a rollback
	// admitted in the moment before the group was given the newer one.
	ReasonDowngradeRefused = "DowngradeRefused"
	// ReasonSetsReady: every set is Ready at its generation.
	ReasonSetsReady = "SetsReady"
)

// Reasons of the LogSet's Available, Progressing and Ready conditions, next
// to the shared ones in api/common/v1alpha1 (Creating, Restarting, Stable,
// NoLeader).
const (
	// ReasonHAKeeperUnreachable: no log pod's probe could read HAKeeper's
	// view (no store up yet, or HAKeeper without a quorum).
	ReasonHAKeeperUnreachable = "HAKeeperUnreachable"
	// ReasonBootstrapping: HAKeeper runs but has not finished creating the
	// log shards.
	ReasonBootstrapping = "Bootstrapping"
	// ReasonStoresDown: a store of the set is down or unknown to HAKeeper.
	ReasonStoresDown = "StoresDown"
	// ReasonShardsLed: HAKeeper runs and every log shard has a leader
	// (Available=True).
	ReasonShardsLed = "ShardsLed"
	// ReasonWaitingForSharedStorage: the shared filesystem claim does not
	// exist yet.
	ReasonWaitingForSharedStorage = "WaitingForSharedStorage"
)

// Reasons of the StoresHealthy condition.
const (
	// ReasonAllStoresUp: every store's pod is ready and HAKeeper hears from
	// its store (StoresHealthy=True).
	ReasonAllStoresUp = "AllStoresUp"
	// ReasonStoreDown: a store is down, for less than
	// spec.storeFailureTimeout.
	ReasonStoreDown = "StoreDown"
	// ReasonReplacementBlocked: a store has been down for
	// spec.storeFailureTimeout but replacing it now would not be safe; the
	// message says why.
	ReasonReplacementBlocked = "ReplacementBlocked"
	// ReasonReplacementDisabled: a store has been down for long, and
	// spec.storeFailureTimeout is 0.
	ReasonReplacementDisabled = "ReplacementDisabled"
	// ReasonReplicasMissing: every store is up, but a shard runs fewer
	// replicas than it should (a replaced store not yet given the failed
	// one's by HAKeeper, or a restarted one not yet reporting them); also
	// Ready's reason then.
	ReasonReplicasMissing = "ReplicasMissing"
)

// Reasons of the Events the LogSet controller records.
const (
	// EventStoreRestarted: a log store's pod was deleted to restart it onto
	// the latest revision.
	EventStoreRestarted = "StoreRestarted"
	// EventStoreReplaced: a failed log store's volume claim and pod were
	// deleted, so that its pod comes back as a new store.
	EventStoreReplaced = "StoreReplaced"
	// EventStoreRemoved: a log store beyond spec.replicas left the set
	// (HAKeeper moved its replicas) and its volume claim was deleted.
	EventStoreRemoved = "StoreRemoved"
	// EventSharedClaimCreated: the LogSet made the shared filesystem claim
	// its spec sizes, or the BucketClaim of its template.
	EventSharedClaimCreated = "SharedClaimCreated"
)

// Reasons of the TNSet's, CNSet's and ProxySet's conditions, next to the
// LogSet's and the shared ones.
const (
	// ReasonWaitingForTN: HAKeeper hears from no TN store yet; a CN
	// started before one gives up after 30 s.
	ReasonWaitingForTN = "WaitingForTN"
	// ReasonStoresServing: the set's stores are up (Available=True).
	ReasonStoresServing = "StoresServing"
	// ReasonLabeling: a CN's labels in HAKeeper are not yet the CNSet's
	// spec.labels (the message names it and the error, if setting them
	// failed).
	ReasonLabeling = "Labeling"
	// ReasonDraining: CNs that leave the set (scale-in) or restart are
	// draining: the proxy moves their sessions to the other CNs.
	ReasonDraining = "Draining"
)

// Reasons of the Events the store set controllers record, next to
// EventStoreRestarted.
const (
	// EventDraining: a CN was set draining before it leaves or restarts.
	EventDraining = "Draining"
	// EventDrained: a draining CN holds no session any more.
	EventDrained = "Drained"
	// EventDrainTimedOut: a CN still held sessions at spec.drainTimeout
	// and leaves or restarts anyway; those sessions are cut.
	EventDrainTimedOut = "DrainTimedOut"
	// EventLabeled: a CN's labels were set in HAKeeper to the CNSet's
	// spec.labels.
	EventLabeled = "Labeled"
	// EventUndrained: a CN HAKeeper had as draining, which the set keeps
	// (after its restart, or a scale-in undone), was set working again.
	EventUndrained = "Undrained"
)

// Reason of a LogSet's (and its sets') Ready and Progressing conditions
// when its shared storage is a BucketClaim bound to another LogSet. A
// claim that does not exist or is not bound yet is
// ReasonWaitingForSharedStorage.
const (
	// ReasonBucketClaimInUse: the BucketClaim the LogSet names is bound to
	// another LogSet (or is in Conflict, or being deleted): this LogSet
	// never starts on it.
	ReasonBucketClaimInUse = "BucketClaimInUse"
)

// Reasons of a BucketClaim's conditions. Its Ready condition's reason is
// its phase's (Available, Bound, Released), or what keeps it from one.
const (
	// ReasonBucketExists: the bucket exists and answers (BucketReady=True).
	ReasonBucketExists = "BucketExists"
	// ReasonCredentialsMissing: the credentials Secret (or the CA Secret)
	// is missing, or lacks a key (BucketReady=False).
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonGatewayNotReady: the S3 gateway over a Backup's volume claim
	// does not serve yet (or cannot be made: the claim is missing).
	ReasonGatewayNotReady = "GatewayNotReady"
	// ReasonBucketUnreachable: the store refused the bucket's check or
	// creation, or could not be reached; the message has its answer
	// (BucketReady=False).
	ReasonBucketUnreachable = "BucketUnreachable"
	// ReasonAvailable: no LogSet has bound the claim (Bound=False, and
	// Ready=True: the first LogSet that names it binds it).
	ReasonAvailable = "Available"
	// ReasonBound: the claim is bound to the LogSet status.boundTo names
	// (Bound=True, Ready=True).
	ReasonBound = "Bound"
	// ReasonReleased: the LogSet the claim was bound to is gone
	// (Bound=False; Ready=True under Retain).
	ReasonReleased = "Released"
	// ReasonConflict: the claim's location overlaps an older claim's; it
	// is never bound or emptied (Bound=False, Ready=False).
	ReasonConflict = "Conflict"
	// ReasonWaitingForPods: the claim waits, before its objects are
	// deleted, for the pods that mounted it to go (Ready=False).
	ReasonWaitingForPods = "WaitingForPods"
	// ReasonDeletionBlocked: the claim was deleted while a LogSet is bound
	// to it; it stays until the LogSet is gone (Ready=False).
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonEmptying: the objects under the claim's prefix are being
	// deleted (Ready=False; status.deletion has the progress).
	ReasonEmptying = "Emptying"
)

// Reasons of the Events the BucketClaim controller records, besides the
// Events of its conditions' transitions (Bound, Released, Conflict, ...).
const (
	// EventBucketCreated: the controller made the claim's bucket.
	EventBucketCreated = "BucketCreated"
	// EventReleasedClaimDeleted: the controller deleted a Released claim
	// under reclaimPolicy Delete (its prefix is emptied before it goes).
	EventReleasedClaimDeleted = "ReleasedClaimDeleted"
	// EventEmptyingPrefix: the controller began deleting the objects under
	// the claim's prefix.
	EventEmptyingPrefix = "EmptyingPrefix"
	// EventPrefixEmptied: no object is left under the claim's prefix.
	EventPrefixEmptied = "PrefixEmptied"
	// EventVolumeClaimGone: a Backup on a volume claim was deleted after
	// the claim (or with it): its objects are the claim's volume's, and go
	// as the volume's reclaim policy says.
	EventVolumeClaimGone = "VolumeClaimGone"
	// EventObjectsKept: the claim went and left its objects in place
	// (reclaimPolicy Retain, a claim never bound, or one in Conflict,
	// whose prefix is another claim's).
	EventObjectsKept = "ObjectsKept"
)

// Reasons of a Backup's Ready condition when it is False, next to
// ReasonCredentialsMissing, ReasonBucketUnreachable and ReasonEmptying.
// Ready is True (Reconciled) when the store holds the backup's mo_meta,
// hakeeper/hk_data and a full backup's tae/tae_sum.
const (
	// ReasonBackupIncomplete: a file every complete backup has is
	// missing (a backup still being written, or one that failed), or its
	// tae_sum does not read as MatrixOne writes it.
	ReasonBackupIncomplete = "Incomplete"
	// ReasonBackupIncremental: the backup is an incremental one, which a
	// restore cannot start from alone; Steward takes only full ones.
	ReasonBackupIncremental = "Incremental"
)

// Reasons of a BackupJob's Ready condition when it is False; its steps'
// progress is in status.operation. Ready is True (Reconciled) once the
// backup is complete and recorded as the Backup status.backup names.
const (
	// ReasonQueued: an older BackupJob of the same cluster has not
	// finished; jobs of one cluster run one at a time.
	ReasonQueued = "Queued"
	// ReasonBackingUp: the backup flow runs (status.operation.step says
	// where).
	ReasonBackingUp = "BackingUp"
	// ReasonBackupFailed: the backup flow failed; status.operation says at
	// which step and why.
	ReasonBackupFailed = "Failed"
)

// Reasons of the Events the BackupJob and Backup controllers record.
const (
	// EventBackupStarted: the backup pod's Job was created.
	EventBackupStarted = "BackupStarted"
	// EventBackupRecorded: the backup finished and its Backup was created.
	EventBackupRecorded = "BackupRecorded"
	// EventBackupDeleted: every object of a Backup under deletionPolicy
	// Delete was deleted.
	EventBackupDeleted = "BackupObjectsDeleted"
	// EventBackupScheduled: a BackupSchedule created the BackupJob of a
	// run.
	EventBackupScheduled = "BackupScheduled"
	// EventBackupSkipped: a run was due while the schedule's previous
	// BackupJob had not finished; it was skipped.
	EventBackupSkipped = "BackupSkipped"
	// EventBackupExpired: a BackupSchedule deleted a Backup its retention
	// does not keep.
	EventBackupExpired = "BackupExpired"
)

// Reasons of a restore (spec.restoreFrom).
const (
	// ReasonRestoring: the LogSet copies the backup's data before its
	// stores start, or the cluster forces a global checkpoint and restarts
	// its TN before its proxies start (status.restore and
	// status.operation say where).
	ReasonRestoring = "Restoring"
	// EventRestoreDataCopied: the backup's data is copied; the log stores
	// start.
	EventRestoreDataCopied = "RestoreDataCopied"
	// EventRestored: the restore completed: the cluster's proxies start.
	EventRestored = "Restored"
)

// Reasons of a Snapshot's Ready condition when it is False, next to
// ReasonBackupFailed (the flow failed: status.operation says why) and
// ReasonDeletionBlocked (a SnapshotRestore restores from it). Ready is
// True (Reconciled) while MatrixOne lists the snapshot.
const (
	// ReasonTakingSnapshot: the snapshot flow runs (waits for the cluster,
	// or takes the snapshot).
	ReasonTakingSnapshot = "Taking"
	// ReasonSnapshotMissing: MatrixOne no longer lists the snapshot
	// (dropped outside Steward).
	ReasonSnapshotMissing = "Missing"
	// ReasonClusterGone: the snapshot's cluster is gone (or going), and
	// its snapshots with it.
	ReasonClusterGone = "ClusterGone"
	// ReasonClusterUnreachable: no ready CN of the cluster answered the
	// statement reading (or dropping) the snapshot; the message has why.
	ReasonClusterUnreachable = "ClusterUnreachable"
)

// Reasons of the Events the Snapshot and SnapshotRestore controllers
// record; a completed restore records EventRestored.
const (
	// EventSnapshotTaken: MatrixOne took the snapshot.
	EventSnapshotTaken = "SnapshotTaken"
	// EventSnapshotDropped: the snapshot was dropped, its Snapshot
	// deleted.
	EventSnapshotDropped = "SnapshotDropped"
	// EventRestoreStarted: the RESTORE statement was sent.
	EventRestoreStarted = "RestoreStarted"
)
