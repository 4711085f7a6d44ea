// Package api holds Steward's API groups, one directory per system and
// version (api/<system>/v1alpha1), each with its kubebuilder-marked types and
// their generated DeepCopy methods. No API group exists yet; ZooKeeper's is
// the first planned.
package api
