package build

import (
	"maps"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// Sources of the children's fields in the spec, for admission's dry run of
// the children (framework.ChildRenderer): a field path of the child, as the
// API server names it in a validation error, to the spec field it comes
// from. The paths follow the builders in this package; the apiserver test
// renders an invalid value for each and checks the error names its source.
var (
	// StatefulSetSources are the StatefulSet's.
	StatefulSetSources = withPlacement(map[string]string{
		containerPath + ".image":                               "spec.image",
		containerPath + ".imagePullPolicy":                     "spec.imagePullPolicy",
		containerPath + ".resources":                           "spec.resources",
		containerPath + ".ports[3]":                            "spec.adminPort",
		"spec.volumeClaimTemplates[0].spec.resources[storage]": "spec.storage.size",
		"spec.volumeClaimTemplates[0].spec.storageClassName":   "spec.storage.storageClassName",
	})
	// ClientServiceSources are the client Service's.
	ClientServiceSources = map[string]string{
		"metadata.annotations":   "spec.clientService.annotations",
		"spec.type":              "spec.clientService.type",
		"spec.ports[0].nodePort": "spec.clientService.nodePort",
	}
	// PodDisruptionBudgetSources are the PodDisruptionBudget's.
	PodDisruptionBudgetSources = map[string]string{
		"spec.maxUnavailable": "spec.maxUnavailable",
	}
)

// withPlacement adds the pod placement's sources to a StatefulSet's.
func withPlacement(sources map[string]string) map[string]string {
	maps.Copy(sources, standard.PlacementSources("spec.template.spec"))
	return sources
}

// containerPath is the server container's path in the StatefulSet.
const containerPath = "spec.template.spec.containers[0]"

// ConfigMapName is the name of the content-addressed ConfigMap that holds
// data, as the framework names it (framework.Context.EnsureConfigMap).
func ConfigMapName(zk *zkv1.ZookeeperCluster, data map[string]string) string {
	return standard.ConfigMapName(zk.Name, ComponentConfig, data)
}
