// Package v1alpha1 is the oceanbase.steward.dev/v1alpha1 API: OBCluster, an
// OceanBase cluster of observers in zones; OBTenant, a tenant of one;
// OBParameter, one cluster parameter; and OBZone and OBServer, views of a
// cluster's zones and observers that the cluster's controller creates
// (docs/oceanbase.md).
//
// +kubebuilder:object:generate=true
// +groupName=oceanbase.steward.dev
package v1alpha1
