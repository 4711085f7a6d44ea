// Package v1alpha1 is the gpss.steward.dev/v1alpha1 API: the GpssCluster
// kind, distributed GPSS (Greenplum Streaming Server) instances that
// cooperate through an etcd, each with its own gpfdist Service, behind one
// gRPC Service.
//
// +kubebuilder:object:generate=true
// +groupName=gpss.steward.dev
package v1alpha1
