// Package v1alpha1 is the matrixone.steward.dev/v1alpha1 API: MatrixOne's
// roles as sets that are each usable alone and depend on each other only
// through status: LogSet, the log service (HAKeeper and the log shards);
// TNSet, the transaction node; CNSet, a group of compute nodes; ProxySet,
// the proxies; and MatrixOneCluster, the umbrella that makes a LogSet, a
// TNSet, CNSets and a ProxySet (docs/matrixone.md).
//
// +kubebuilder:object:generate=true
// +groupName=matrixone.steward.dev
package v1alpha1
