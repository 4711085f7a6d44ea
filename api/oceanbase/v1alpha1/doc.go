// Package v1alpha1 is the oceanbase.steward.dev/v1alpha1 API: OBCluster, an
// OceanBase cluster of observers in zones. This version is a preview: the
// cluster is created, bootstrapped, observed and scaled within its zones;
// zones, tenants and parameters as their own kinds come later
// (docs/oceanbase.md).
//
// +kubebuilder:object:generate=true
// +groupName=oceanbase.steward.dev
package v1alpha1
