package matrixone_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// podMonitorCRD is the Prometheus operator's PodMonitor CRD as far as the
// test needs it: the kind, namespaced, at v1, its spec unchecked (the real
// CRD's schema is the operator's; the test reads back the fields Steward
// writes, under their real names).
func podMonitorCRD() *unstructured.Unstructured {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "podmonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "PodMonitor", "listKind": "PodMonitorList", "plural": "podmonitors", "singular": "podmonitor"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}},
		},
	}}
	return crd
}

func podMonitor(t *testing.T, c client.Client, ns string) (*unstructured.Unstructured, bool) {
	t.Helper()
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(framework.PodMonitorGVK)
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "mo"}, pm)
	return pm, err == nil
}

// A cluster asked for a PodMonitor says it cannot make one while the
// PodMonitor CRD is missing, makes it over every set's pods once the CRD
// is there, and deletes it when no longer asked.
func TestClusterPodMonitor(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "a")
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) {
		mc.Spec.Monitoring = commonv1.MonitoringSpec{PodMonitor: true, PodMonitorLabels: map[string]string{"release": "prom"}}
	})
	eventually(t, "Monitoring=False while the CRD is missing", func() (bool, string) {
		got := condition(cluster(t, c, ns), commonv1.ConditionMonitoring)
		return strings.HasPrefix(got, "False") && strings.Contains(got, commonv1.ReasonPodMonitorCRDMissing), got
	})
	if got := condition(cluster(t, c, ns), framework.ConditionReady); !strings.HasPrefix(got, "True") {
		t.Errorf("Ready %s: a missing PodMonitor CRD must not make the cluster unready", got)
	}

	crd := podMonitorCRD()
	if err := c.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(t.Context(), crd) })
	// A change of the labels starts a pass, which finds the CRD.
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.Monitoring.PodMonitorLabels["team"] = "db" })
	var pm *unstructured.Unstructured
	eventually(t, "the PodMonitor made", func() (bool, string) {
		var ok bool
		pm, ok = podMonitor(t, c, ns)
		return ok, condition(cluster(t, c, ns), commonv1.ConditionMonitoring)
	})
	labels := pm.GetLabels()
	if labels["release"] != "prom" || labels["team"] != "db" || labels["app.kubernetes.io/instance"] != "mo" {
		t.Errorf("the PodMonitor's labels %v", labels)
	}
	if ref := pm.GetOwnerReferences(); len(ref) != 1 || ref[0].Kind != "MatrixOneCluster" || ref[0].Name != "mo" {
		t.Errorf("the PodMonitor's owners %+v", ref)
	}
	values, _, _ := unstructured.NestedSlice(pm.Object, "spec", "selector", "matchExpressions")
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	name, _, _ := unstructured.NestedString(pm.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/name")
	want := []any{"mo-a", "mo-log", "mo-proxy", "mo-tn"}
	if len(values) != 1 || name != "matrixone" || fmt.Sprint(values[0].(map[string]any)["values"]) != fmt.Sprint(want) {
		t.Errorf("the PodMonitor's selector: name %q, expressions %v; want the instances %v", name, values, want)
	}
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("the PodMonitor's endpoints %v, want the metrics port", endpoints)
	}
	eventually(t, "Monitoring=True", func() (bool, string) {
		got := condition(cluster(t, c, ns), commonv1.ConditionMonitoring)
		return strings.HasPrefix(got, "True"), got
	})

	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.Monitoring.PodMonitor = false })
	eventually(t, "the PodMonitor deleted and the condition gone", func() (bool, string) {
		_, ok := podMonitor(t, c, ns)
		cond := condition(cluster(t, c, ns), commonv1.ConditionMonitoring)
		return !ok && cond == "none", fmt.Sprintf("PodMonitor there %v, condition %s", ok, cond)
	})
}
