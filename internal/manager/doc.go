// Package manager builds and runs Steward's controller-runtime manager.
//
// It owns the command-line surface of the steward binary ([Options] and
// [Options.BindFlags]), resolves the --systems selection against the systems
// compiled into the build, and wires the manager's health probes, metrics
// endpoint, leader election and graceful shutdown. cmd/steward only parses
// flags, sets up logging and calls [Run], so everything here can be tested
// against a real API server.
//
// The RBAC markers in this package describe what the manager itself needs,
// independent of any system; each system declares its own next to its
// controllers. make manifests (controller-gen) collects them into
// charts/steward/files/role.yaml, the chart's ClusterRole.
package manager
