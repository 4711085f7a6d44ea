// Package build holds the pure builders of Steward's MatrixOne objects:
// functions from what a set needs to the desired objects, with no client:
// the mo-service configuration of each role (config.go), with the keys the
// operator owns and the user's TOML merged under them, and the check that
// rejects a user's TOML that sets an owned key; the LogSet's children
// (logset.go); the TN's, CNs' and proxies' sets (storeset.go); the pods'
// labels, memory and shared storage (pods.go); and the sets a
// MatrixOneCluster makes (cluster.go).
//
// +steward:role=builder
package build
