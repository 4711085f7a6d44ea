// Package matrixone holds Steward's MatrixOne controllers: the LogSet's
// (the log service: HAKeeper and the log shards), the TNSet's, CNSet's and
// ProxySet's, the MatrixOneCluster umbrella's, which makes a LogSet, a
// TNSet, its CNSets and a ProxySet and orders a rollout across them, and
// the BucketClaim's, a claim on an S3 prefix that a LogSet's shared storage
// names, and the backups': BackupJob (one physical backup), Backup (its
// record, read back from the store) and BackupSchedule, and the account
// snapshots': Snapshot and SnapshotRestore. Each is a
// framework actor; the sets depend on each other only through status.
// They run the image images/matrixone, observe HAKeeper through mo-agent's
// probe in the log pods (package hakeeper) and build their children with
// package build. docs/matrixone.md has the design.
//
// One package, a file per actor, as OceanBase's (the sets share the
// HAKeeper views, the drain and the stores' status):
//   - controller.go: Options, System and Setup (every kind's controller),
//     and the MatrixOneCluster actor, the kind the system is named for
//     (its rollout order, CN groups whose count an autoscaler owns, its
//     PodMonitor);
//   - upgrade.go: MatrixOne's version rules, at admission for every kind
//     and in the cluster's rollout (no CN group given an older version);
//   - logset.go, logset_status.go: the LogSet actor, and its status and
//     conditions from what Declare observed;
//   - storeset.go: the TNSet, CNSet and ProxySet actor (one generic actor,
//     the kinds told apart in kinds.go), its status and conditions;
//   - bucketclaim.go, bucketclaim_status.go: the BucketClaim actor (the
//     bucket, binding, release, and emptying the prefix in its Finalize),
//     and its phase and conditions from what Declare observed;
//   - backupjob.go, backup.go, backupschedule.go: the BackupJob actor and
//     its backup flow, the Backup actor, and the BackupSchedule actor (a
//     level-based one: runs and retention, of backups or snapshots);
//   - snapshot.go, snapshotrestore.go: the Snapshot actor (its flow takes
//     the snapshot; every pass reads it back; Finalize drops it) and the
//     SnapshotRestore actor and its restore flow;
//   - scale.go, restart.go, logset_replace.go, logset_restore.go,
//     cluster_restore.go: the task flows (a CN scale-in; every set's
//     rolling restart; a failed log store's replacement; a LogSet's restore
//     from a Backup; a restored cluster's global checkpoint and TN restart
//     before its proxies start), each with its helpers; no code outside a
//     flow's file names its steps;
//   - drain.go: a CN's drain, which the scale-in and the rolling restart
//     run, recorded on its pod;
//   - sets.go, views.go: what the sets share: the pods' and shared
//     storage's validation, a BucketClaim's location resolved for
//     rendering (resolveSharedStorage), a revision pending, the claims'
//     reclaim, and HAKeeper's view of the stores read through the log
//     pods;
//   - s3clients.go: the S3 clients of claims, backups and restores, with
//     their Secrets' keys;
//   - webhook.go: every kind's admission (a BucketClaim's overlaps too).
package matrixone
