// Package metrics defines the Prometheus metrics of Steward's reconcile
// framework and registers them on controller-runtime's registry
// (sigs.k8s.io/controller-runtime/pkg/metrics.Registry), so the manager's
// metrics endpoint serves them next to controller-runtime's own.
//
// Registration happens once, when the package is initialized; using the
// collectors from several managers or tests in one process is safe.
package metrics
