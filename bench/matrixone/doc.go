// Package matrixone benchmarks the MatrixOne system on a local cluster
// with real MatrixOne (make bench; bench-setup installs Steward with
// matrixone among its systems). Each cluster is one log store, a TN, a CN
// and a proxy (about 2 GiB of memory limits) but BenchmarkUpgrade's; one
// runs at a time.
//
//   - BenchmarkCreate, in each of a few rounds: the same four roles started
//     by hand — the StatefulSets, Services and configuration Steward's
//     builders make, created directly, the CN once the TN's pod is ready
//     (a CN started before any TN gives up after 30 s), no operator — and
//     a MatrixOneCluster applied to Steward. For each it reports the time
//     from the first create to the first "select 1" answered through the
//     proxy (a probe pod asks every 100 ms, each time on a new
//     connection), the ratio of Steward's to the hand's (the physical
//     limit: the same pods, started as early as their dependencies allow),
//     and the operator's API requests and writes per cluster beyond its
//     idle baseline.
//   - BenchmarkBackup runs a cluster on S3 (versitygw, started by
//     hack/versitygw.sh), loads 400 000 rows of 256 bytes (or
//     BENCH_MO_BACKUP_ROWS), backs it up with a BackupJob and reports the
//     backup's size, MatrixOne's BACKUP statement's throughput (from the
//     backup pod's message), the job's throughput from its creation to
//     Ready, the throughput of plain copies of the same objects by an S3
//     client, one object at a time from the benchmark through a
//     port-forward (server-side copies, and each object read and written
//     back through the client as the CN copies them) and the ratios of the
//     statement's time to theirs, the operator's API requests and writes
//     for the backup, and the time from applying a cluster restored from
//     the backup to its first answered SQL (every row is checked there).
//   - BenchmarkUpgrade (make bench-matrixone-upgrade, which builds and
//     loads the older image and names it in BENCH_MO_UPGRADE_FROM; skipped
//     without it) upgrades a cluster of three log stores, a TN, two CNs and
//     a proxy from MatrixOne 1.2.3 to the default image under a writer (a
//     row every 100 ms, each on a new connection through the proxy), twice:
//     by hand — the objects byHand makes, each StatefulSet's image changed
//     and its pods deleted one at a time in the order log store, CNs, TN,
//     proxy, each once the one before is ready on the new revision, no CN
//     drained — and as a MatrixOneCluster whose spec.image changes. For
//     each it reports the time from the change to every pod on the new
//     image (Steward's: and the cluster Ready), the longest pause between
//     two acknowledged writes, the failed writes, and the ratios of
//     Steward's figures to the hand's, and each pause of a second or more
//     with when each role's pods were created; every acknowledged row is
//     checked. About 3.4 GiB of memory limits.
//   - BenchmarkIdle holds a Ready cluster for a minute and counts the
//     changes to it, its sets and their children (any writer), and the
//     operator's writes beyond leader election: the target is zero.
//
// They print figures and assert nothing about time. Run them with
// `make bench BENCH_PACKAGES=./bench/matrixone`.
package matrixone
