package build

import (
	"fmt"
	"maps"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// Sources of the children's fields in the spec, for admission's dry run of
// the children (framework.ChildRenderer): a field path of the child, as the
// API server names it in a validation error, to the spec field it comes
// from. The paths follow the builders in this package.

// containerPath is the observer container's path in a StatefulSet.
const containerPath = "spec.template.spec.containers[0]"

// StatefulSetSources are those of the StatefulSet of the zone at index i
// of c's spec.zones: its placement is the zone's when it has one, the
// cluster's otherwise.
func StatefulSetSources(c *obv1.OBCluster, i int) map[string]string {
	s := map[string]string{
		"metadata.name":                                        fmt.Sprintf("spec.zones[%d].name", i),
		containerPath + ".image":                               "spec.image",
		containerPath + ".imagePullPolicy":                     "spec.imagePullPolicy",
		containerPath + ".resources":                           "spec.resources",
		"spec.volumeClaimTemplates[0].spec.resources[storage]": "spec.storage.size",
		"spec.volumeClaimTemplates[0].spec.storageClassName":   "spec.storage.storageClassName",
	}
	placement := "spec.placement"
	if c.Spec.Zones[i].Placement != nil {
		placement = fmt.Sprintf("spec.zones[%d].placement", i)
	}
	maps.Copy(s, standard.PlacementSourcesAt("spec.template.spec", placement))
	return s
}

// ServerServiceSources are those of a server's Service in the zone at
// index i of spec.zones: its name is made of the zone's.
func ServerServiceSources(i int) map[string]string {
	return map[string]string{"metadata.name": fmt.Sprintf("spec.zones[%d].name", i)}
}
