package framework

import "maps"

// The standard labels the framework puts on every child.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// ManagedBy is the value of LabelManagedBy on every child.
const ManagedBy = "steward"

// StandardLabels returns the standard labels of a child of the object named
// instance: app is the application (app.kubernetes.io/name), partOf the
// system it belongs to, component the child's role. Empty values are left
// out.
func StandardLabels(app, instance, component, partOf string) map[string]string {
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

// ownedSelector returns the labels every child of instance carries.
func ownedSelector(instance string) map[string]string {
	return map[string]string{LabelInstance: instance, LabelManagedBy: ManagedBy}
}

// mergeLabels returns base with extra laid over it.
func mergeLabels(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	maps.Copy(out, base)
	maps.Copy(out, extra)
	return out
}
