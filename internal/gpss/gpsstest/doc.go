// Package gpsstest starts what GPSS tests need: an etcd (the upstream
// binary envtest uses, from KUBEBUILDER_ASSETS) and GPSS simulator
// instances on it, on loopback.
//
// +steward:role=testing
package gpsstest
