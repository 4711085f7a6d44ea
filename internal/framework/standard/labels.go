package standard

import "maps"

// The standard labels Steward puts on every child.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// ManagedBy is the value of LabelManagedBy on every child.
const ManagedBy = "steward"

// Labels returns the standard labels of a child of the object named
// instance: app is the application (app.kubernetes.io/name), partOf the
// system it belongs to, component the child's role. Empty values are left
// out.
func Labels(app, instance, component, partOf string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy}
	for k, v := range map[string]string{
		LabelName:      app,
		LabelInstance:  instance,
		LabelComponent: component,
		LabelPartOf:    partOf,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// Selector returns the labels that select the children of instance playing
// component, for a workload's (immutable) selector: the standard labels
// minus part-of, the one label a system may rename without its pods
// changing.
func Selector(app, instance, component string) map[string]string {
	return Labels(app, instance, component, "")
}

// Owned returns the labels every child of instance carries, whatever its
// component.
func Owned(instance string) map[string]string {
	return map[string]string{LabelInstance: instance, LabelManagedBy: ManagedBy}
}

// Merge returns base with extra laid over it, as a new map.
func Merge(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	maps.Copy(out, base)
	maps.Copy(out, extra)
	return out
}
