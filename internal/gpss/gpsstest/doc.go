// Package gpsstest starts what GPSS tests need from the real world: an etcd
// (the upstream binary envtest uses, from KUBEBUILDER_ASSETS) on loopback.
package gpsstest
