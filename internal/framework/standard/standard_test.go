package standard

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

func TestConfigMapName(t *testing.T) {
	a := map[string]string{"a": "bc"}
	tests := []struct {
		name string
		x, y map[string]string
		same bool
	}{
		{"equal content", map[string]string{"k": "v", "l": "w"}, map[string]string{"l": "w", "k": "v"}, true},
		{"different value", map[string]string{"k": "v"}, map[string]string{"k": "w"}, false},
		{"key/value boundary", a, map[string]string{"ab": "c"}, false},
		{"empty", nil, map[string]string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if same := ConfigHash(tt.x) == ConfigHash(tt.y); same != tt.same {
				t.Errorf("hash(%v) == hash(%v) is %v, want %v", tt.x, tt.y, same, tt.same)
			}
		})
	}
	name := ConfigMapName("zk", "config", a)
	if !strings.HasPrefix(name, "zk-config-") || len(name) != len("zk-config-")+10 {
		t.Errorf("ConfigMapName = %q, want zk-config-<10 hex digits>", name)
	}
}

func TestStandardLabels(t *testing.T) {
	got := Labels("zookeeper", "zk", "", "steward")
	want := map[string]string{LabelName: "zookeeper", LabelInstance: "zk", LabelPartOf: "steward", LabelManagedBy: ManagedBy}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StandardLabels = %v, want %v", got, want)
	}
}

func TestApplyPlacement(t *testing.T) {
	spread := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	mine := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	tests := []struct {
		name         string
		placement    commonv1.PodPlacement
		wantAffinity *corev1.Affinity
	}{
		{"default affinity when none is given", commonv1.PodPlacement{}, spread},
		{"the user's affinity replaces the default", commonv1.PodPlacement{Affinity: mine}, mine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.placement
			p.NodeSelector = map[string]string{"disk": "ssd"}
			p.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			p.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone"}}
			p.PriorityClassName = "high"
			var spec corev1.PodSpec
			ApplyPlacement(&spec, p, spread)
			if spec.Affinity.String() != tt.wantAffinity.String() {
				t.Errorf("affinity %v, want %v", spec.Affinity, tt.wantAffinity)
			}
			if spec.NodeSelector["disk"] != "ssd" || len(spec.Tolerations) != 1 || len(spec.TopologySpreadConstraints) != 1 || spec.PriorityClassName != "high" {
				t.Errorf("placement not applied: %+v", spec)
			}
			// The spec must not alias the placement.
			spec.NodeSelector["disk"] = "hdd"
			spec.Tolerations[0].Key = "changed"
			if p.NodeSelector["disk"] != "ssd" || p.Tolerations[0].Key != "dedicated" {
				t.Error("the pod spec aliases the placement")
			}
		})
	}
}

func TestApplyOverrides(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{}
	tmpl.Labels = map[string]string{LabelName: "zookeeper", LabelInstance: "zk"}
	tmpl.Annotations = map[string]string{"steward.dev/config": "abc"}
	ApplyOverrides(&tmpl, commonv1.PodOverrides{
		PodLabels:          map[string]string{"team": "data", LabelInstance: "other"},
		PodAnnotations:     map[string]string{"mesh/inject": "false", "steward.dev/config": "user"},
		ServiceAccountName: "zk-workload",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "registry"}},
	})
	if tmpl.Labels["team"] != "data" || tmpl.Labels[LabelInstance] != "zk" {
		t.Errorf("labels %v: want the user's added and the standard ones kept", tmpl.Labels)
	}
	if tmpl.Annotations["mesh/inject"] != "false" || tmpl.Annotations["steward.dev/config"] != "abc" {
		t.Errorf("annotations %v: want the user's added and Steward's kept", tmpl.Annotations)
	}
	if tmpl.Spec.ServiceAccountName != "zk-workload" || len(tmpl.Spec.ImagePullSecrets) != 1 {
		t.Errorf("service account %q, pull secrets %v", tmpl.Spec.ServiceAccountName, tmpl.Spec.ImagePullSecrets)
	}
}
