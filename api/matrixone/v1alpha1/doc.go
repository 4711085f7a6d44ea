// Package v1alpha1 is the matrixone.steward.dev/v1alpha1 API: MatrixOne's
// roles as sets that are each usable alone and depend on each other only
// through status. So far it has LogSet, the log service (HAKeeper and the
// log shards); TNSet, CNSet, ProxySet and the MatrixOneCluster umbrella
// follow (docs/matrixone.md).
//
// +kubebuilder:object:generate=true
// +groupName=matrixone.steward.dev
package v1alpha1
