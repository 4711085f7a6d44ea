// Package chart tests the Helm chart in charts/steward with the pinned helm
// binary ($HELM, which make installs into ./bin): helm lint, rendered
// templates against golden files (go test ./test/chart -update rewrites
// them), and properties every rendering must keep — no RBAC wildcard, a
// hardened pod, webhooks only for the selected systems, values the schema
// or the templates reject. TestNamespacedInstall installs a namespace-scoped
// rendering's RBAC into a real API server (envtest, as make unit gives it)
// and runs the manager as the chart's ServiceAccount.
package chart
