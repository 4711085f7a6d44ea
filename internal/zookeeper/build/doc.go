// Package build holds the pure builders of a ZookeeperCluster's children:
// functions from a defaulted spec (v1alpha1.Default) to the desired
// Services, PodDisruptionBudget, config files and StatefulSet. They read
// nothing but their arguments and call no API; the controller applies what
// they return (framework Context.Apply, EnsureConfigMap).
//
// Names: the StatefulSet is <name>, its pods <name>-<ordinal> run server
// <ordinal+1>, the peers' headless Service is <name>-headless, the client
// Service <name>-client, the PodDisruptionBudget <name>, and the volume
// claims data-<name>-<ordinal>.
//
// +steward:role=builder
package build
