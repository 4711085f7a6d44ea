// Package gpss benchmarks the GPSS system on a local cluster (make bench,
// bench-setup installs Steward with gpss among its systems): apply → Ready
// of a GpssCluster with a managed etcd, split into the etcd's and the
// instances' shares, the API requests the operator makes per cluster
// created, and a minute of idle clusters (changes to them or their
// children, and the operator's writes). The instances are Steward's GPSS
// simulator, not GPSS, which cannot run here: the figures measure the
// operator, the etcd and Kubernetes, not GPSS's own start.
package gpss
