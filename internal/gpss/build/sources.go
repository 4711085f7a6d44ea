package build

import (
	"maps"

	"github.com/stewardhq/steward/internal/framework/standard"
)

// Sources of the children's fields in the spec, for admission's dry run of
// the children (framework.ChildRenderer): a field path of the child, as the
// API server names it in a validation error, to the spec field it comes
// from.
var (
	// StatefulSetSources are the instances' StatefulSet's.
	StatefulSetSources = func() map[string]string {
		s := map[string]string{
			containerPath + ".image":                "spec.image",
			containerPath + ".imagePullPolicy":      "spec.imagePullPolicy",
			containerPath + ".resources":            "spec.resources",
			"spec.template.spec.serviceAccountName": "spec.serviceAccountName",
		}
		maps.Copy(s, standard.PlacementSources("spec.template.spec"))
		return s
	}()
	// GpfdistServiceSources are each gpfdist Service's.
	GpfdistServiceSources = map[string]string{
		"metadata.annotations": "spec.gpfdistService.annotations",
		"spec.type":            "spec.gpfdistService.type",
	}
	// EtcdStatefulSetSources are the managed etcd's StatefulSet's.
	EtcdStatefulSetSources = map[string]string{
		containerPath + ".image":                               "spec.etcd.managed.image",
		"spec.volumeClaimTemplates[0].spec.resources[storage]": "spec.etcd.managed.storage.size",
		"spec.volumeClaimTemplates[0].spec.storageClassName":   "spec.etcd.managed.storage.storageClassName",
	}
)

// containerPath is the first container's path in a StatefulSet.
const containerPath = "spec.template.spec.containers[0]"
