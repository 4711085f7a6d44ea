// Package api holds Steward's API groups, one directory per system and
// version (api/<system>/v1alpha1), each with its kubebuilder-marked types and
// their generated DeepCopy methods. The first is zookeeper/v1alpha1
// (ZookeeperCluster).
package api
