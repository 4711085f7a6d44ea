package framework

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// PodMonitorGVK is the Prometheus operator's PodMonitor. Steward writes it
// as an unstructured object: the CRD may not exist, and its Go types would
// be a module for one kind.
var PodMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// PodMonitor renders the PodMonitor name in namespace that scrapes the
// port named port, at /metrics, of the pods whose label key is one of
// values and that carry every one of match (the scrape keeps the pods'
// standard labels as target labels, for the dashboards to group by).
// labels are its own labels besides the standard ones Apply sets.
func PodMonitor(namespace, name string, match map[string]string, key string, values []string, port string, labels map[string]string) *unstructured.Unstructured {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(PodMonitorGVK)
	pm.SetNamespace(namespace)
	pm.SetName(name)
	pm.SetLabels(standard.Merge(nil, labels))
	matchLabels := map[string]any{}
	for k, v := range match {
		matchLabels[k] = v
	}
	in := make([]any, len(values))
	for i, v := range values {
		in[i] = v
	}
	pm.Object["spec"] = map[string]any{
		"selector": map[string]any{
			"matchLabels":      matchLabels,
			"matchExpressions": []any{map[string]any{"key": key, "operator": string(metav1.LabelSelectorOpIn), "values": in}},
		},
		"podMetricsEndpoints": []any{map[string]any{"port": port, "path": "/metrics"}},
		"podTargetLabels":     []any{standard.LabelInstance, standard.LabelComponent},
	}
	return pm
}

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;create;patch;delete

// ApplyPodMonitor makes what spec asks for of pm (rendered by PodMonitor):
// applies it as a child playing component while spec.PodMonitor is true,
// deletes it otherwise, and sets the Monitoring condition (removed when no
// PodMonitor is asked for; a PodMonitor is deleted only while the
// condition is there). Where the cluster has no PodMonitor CRD it
// makes nothing and says so; the next pass looks again (the REST mapper
// finds a CRD installed since). Not watched: a PodMonitor deleted by
// hand comes back at the next resync.
func (c *Context[T]) ApplyPodMonitor(spec commonv1.MonitoringSpec, pm *unstructured.Unstructured, component string) error {
	conditions := &c.Obj.StatusCore().Conditions
	if !spec.PodMonitor {
		// A PodMonitor exists only where the condition says one was
		// asked for: without it there is nothing to delete, and no call.
		if meta.FindStatusCondition(*conditions, commonv1.ConditionMonitoring) == nil {
			return nil
		}
		if err := c.deletePodMonitor(pm); err != nil {
			return err
		}
		meta.RemoveStatusCondition(conditions, commonv1.ConditionMonitoring)
		return nil
	}
	pm.SetLabels(standard.Merge(pm.GetLabels(), spec.PodMonitorLabels))
	err := c.Apply(pm, component)
	switch {
	case meta.IsNoMatchError(err):
		c.SetCondition(commonv1.ConditionMonitoring, metav1.ConditionFalse, commonv1.ReasonPodMonitorCRDMissing,
			"spec.monitoring.podMonitor asks for a PodMonitor, but the cluster has no PodMonitor CRD (monitoring.coreos.com/v1): install the Prometheus operator, or set podMonitor false")
		return nil
	case err != nil:
		return err
	}
	c.SetCondition(commonv1.ConditionMonitoring, metav1.ConditionTrue, commonv1.ReasonPodMonitorApplied, "PodMonitor "+pm.GetName())
	return nil
}

// deletePodMonitor deletes pm if the object controls it (a PodMonitor of
// the same name that someone else made is left alone), by UID.
func (c *Context[T]) deletePodMonitor(pm *unstructured.Unstructured) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(PodMonitorGVK)
	err := c.Client.Get(c, client.ObjectKeyFromObject(pm), live)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the PodMonitor %s: %w", pm.GetName(), err)
	case !metav1.IsControlledBy(live, c.Obj):
		return nil
	}
	uid := live.GetUID()
	if err := client.IgnoreNotFound(c.Client.Delete(c, live, client.Preconditions{UID: &uid})); err != nil {
		return fmt.Errorf("delete the PodMonitor %s: %w", pm.GetName(), err)
	}
	c.Log.Info("Deleted the PodMonitor", "podmonitor", pm.GetName())
	return nil
}
