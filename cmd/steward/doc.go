// Command steward is the Steward operator: one controller-runtime manager
// that runs the controllers of every selected data system (ZooKeeper,
// MatrixOne, OceanBase, GPSS).
//
// Usage:
//
//	steward [flags]
//
// The main flags are:
//
//	--systems=all                   systems to run: "all" or a comma-separated list
//	--leader-elect=true             elect one active replica through a Lease
//	--leader-election-namespace=""  the Lease's namespace (default: the pod's namespace)
//	--metrics-bind-address=:8080    Prometheus metrics; "0" disables
//	--health-probe-bind-address=:8081  /healthz and /readyz; "0" disables
//	--graceful-shutdown-timeout=20s time controllers get to stop
//	--kubeconfig=""                 kubeconfig file, when not running in a cluster
//	--zap-devel, --zap-log-level, ...  logging, see sigs.k8s.io/controller-runtime/pkg/log/zap
//
// Run steward --help for the full list. The process stops gracefully on
// SIGTERM or SIGINT; a second signal exits immediately.
package main
