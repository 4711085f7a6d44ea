// Package build holds the pure builders of Steward's MatrixOne objects:
// functions from what a set needs to the desired objects, with no client.
// So far: the mo-service configuration template of each role (config.go),
// with the keys the operator owns and the user's TOML merged under them,
// and the check that rejects a user's TOML that sets an owned key.
//
// +steward:role=builder
package build
