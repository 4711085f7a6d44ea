package framework

import (
	"errors"
	"testing"
)

func TestSourceField(t *testing.T) {
	sources := map[string]string{
		"spec.template.spec.tolerations":   "spec.tolerations",
		"spec.template.spec":               "spec.pod",
		"spec.template.spec.containers[0]": "spec.server",
		"metadata.annotations":             "spec.service.annotations",
	}
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"spec.template.spec.tolerations[0].operator", "spec.tolerations[0].operator", true},
		{"spec.template.spec.tolerations", "spec.tolerations", true},
		{"spec.template.spec.containers[0].image", "spec.server.image", true},
		{"spec.template.spec.nodeSelector", "spec.pod.nodeSelector", true},
		// A prefix that ends inside a field name is no source.
		{"spec.template.spec.tolerationsExtra", "spec.pod.tolerationsExtra", true},
		{"metadata.annotationsx", "", false},
		{"metadata.labels", "", false},
	} {
		got, ok := sourceField(sources, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("sourceField(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// TestChildrenChecksRememberPerObject: a check is reused only for the same
// object and the same rendering.
func TestChildrenChecksRememberPerObject(t *testing.T) {
	var checks childrenChecks
	invalid := errors.New("invalid")
	checks.put("a", "h1", invalid)
	checks.put("b", "h1", nil)
	if ok, err := checks.get("a", "h1"); !ok || !errors.Is(err, invalid) {
		t.Errorf("get(a, h1) = %v, %v; want the remembered error", err, ok)
	}
	if ok, _ := checks.get("a", "h2"); ok {
		t.Error("get(a, h2) found a check of another rendering")
	}
	if ok, err := checks.get("b", "h1"); !ok || err != nil {
		t.Errorf("get(b, h1) = %v, %v; want a remembered success", err, ok)
	}
	checks.forget("a")
	if ok, _ := checks.get("a", "h1"); ok {
		t.Error("get(a, h1) after forget found a check")
	}
}
