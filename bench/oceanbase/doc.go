// Package oceanbase benchmarks the OceanBase system on a local cluster
// (make bench; bench-setup installs Steward with oceanbase among its
// systems). The observers are obsim, Steward's observer simulator, not
// OceanBase, which cannot run here: the figures measure the operator,
// Kubernetes and obsim's configured delays, not OceanBase's own work.
//
//   - BenchmarkCreate creates a 3-zone cluster (one observer per zone) a few
//     times and reports apply → Ready, the latency of each step of the
//     bootstrap flow as seen through the API (from the status write naming
//     a step to the one naming the next), next to the delay obsim adds to
//     that step (its physical floor), and the operator's API requests and
//     writes per cluster beyond its idle baseline. It then scales zone z1
//     out to two observers and back, and reports the scale-in flow's steps
//     the same way.
//   - BenchmarkIdle holds a few Ready clusters for a minute and counts the
//     changes to them and their children (any writer) and the operator's
//     writes beyond leader election: the target is zero.
//   - BenchmarkBackup protects one tenant of a one-observer cluster, its
//     destinations directories on the observer's volume: a policy's apply →
//     archiving, full and incremental backups from creation to completion
//     (beside obsim's job delay) with the operator's API requests per
//     backup, the policy idle for a minute (the target is zero writes),
//     and a restore into a new tenant from apply → Ready (beside obsim's
//     restore delay).
//
// They print figures and assert nothing about time. Run them with
// `make bench BENCH_PACKAGES=./bench/oceanbase`.
package oceanbase
