package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API's group and version.
	GroupVersion = schema.GroupVersion{Group: "oceanbase.steward.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &OBCluster{}, &OBClusterList{}, &OBTenant{}, &OBTenantList{},
		&OBZone{}, &OBZoneList{}, &OBServer{}, &OBServerList{}, &OBParameter{}, &OBParameterList{},
		&OBTenantBackupPolicy{}, &OBTenantBackupPolicyList{}, &OBTenantBackup{}, &OBTenantBackupList{},
		&OBTenantRestore{}, &OBTenantRestoreList{}, &OBTenantOperation{}, &OBTenantOperationList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
