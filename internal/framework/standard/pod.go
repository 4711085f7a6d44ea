package standard

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// ApplyPlacement sets the pod spec's scheduling fields from p. The
// affinity is p's when set, defaultAffinity otherwise (typically a
// preferred anti-affinity that spreads a set's members over nodes). Maps
// and slices are copied: the spec never aliases p.
func ApplyPlacement(spec *corev1.PodSpec, p commonv1.PodPlacement, defaultAffinity *corev1.Affinity) {
	spec.NodeSelector = maps.Clone(p.NodeSelector)
	spec.Affinity = defaultAffinity
	if p.Affinity != nil {
		spec.Affinity = p.Affinity.DeepCopy()
	}
	spec.Tolerations = slices.Clone(p.Tolerations)
	spec.TopologySpreadConstraints = slices.Clone(p.TopologySpreadConstraints)
	spec.PriorityClassName = p.PriorityClassName
}

// ApplyOverrides adds o's labels and annotations to the pod template and
// sets its service account and pull secrets. Labels the template already
// has (the standard ones its workload selects by) win over o's.
func ApplyOverrides(tmpl *corev1.PodTemplateSpec, o commonv1.PodOverrides) {
	if len(o.PodLabels) > 0 {
		tmpl.Labels = Merge(o.PodLabels, tmpl.Labels)
	}
	if len(o.PodAnnotations) > 0 {
		tmpl.Annotations = Merge(o.PodAnnotations, tmpl.Annotations)
	}
	tmpl.Spec.ServiceAccountName = o.ServiceAccountName
	tmpl.Spec.ImagePullSecrets = slices.Clone(o.ImagePullSecrets)
}

// PlacementSources maps the fields ApplyPlacement sets in the pod spec at
// podSpec (a child's field path, "spec.template.spec" for a workload) to
// the spec fields of PodPlacement they come from, for a ChildRenderer's
// Sources, when the PodPlacement is inline in the spec. Add the child's
// other fields to the returned map.
func PlacementSources(podSpec string) map[string]string {
	return PlacementSourcesAt(podSpec, "spec")
}

// PlacementSourcesAt is PlacementSources for a PodPlacement at placement
// ("spec.placement", "spec.zones[0].placement").
func PlacementSourcesAt(podSpec, placement string) map[string]string {
	return map[string]string{
		podSpec + ".nodeSelector":              placement + ".nodeSelector",
		podSpec + ".affinity":                  placement + ".affinity",
		podSpec + ".tolerations":               placement + ".tolerations",
		podSpec + ".topologySpreadConstraints": placement + ".topologySpreadConstraints",
		podSpec + ".priorityClassName":         placement + ".priorityClassName",
	}
}
