// Package wire is the contract between mo-agent and the operator: the JSON
// of HAKeeper's view that `mo-agent probe` serves (View) and the store UUID
// both compute from a pod's name (StoreID).
//
// It is a Go module of its own, with no dependency beyond the standard
// library, so that both sides can import it: mo-agent's module imports
// MatrixOne, which the operator's must never do, and the operator's module
// imports Kubernetes, whose versions must not move MatrixOne's. Each
// requires it through a replace directive to this directory.
package wire
