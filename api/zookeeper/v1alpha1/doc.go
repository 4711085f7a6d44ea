// Package v1alpha1 is the zookeeper.steward.dev/v1alpha1 API: the
// ZookeeperCluster kind, a ZooKeeper ensemble run as a StatefulSet whose
// membership Steward manages through dynamic reconfiguration.
//
// [Default] is the one defaulting function, shared by the (future)
// defaulting webhook and the controller; the CRD's defaults and validation
// rules (OpenAPI bounds and CEL) mirror it and [OperatorOwnedConfigKeys].
//
// +kubebuilder:object:generate=true
// +groupName=zookeeper.steward.dev
package v1alpha1
