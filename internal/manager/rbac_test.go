package manager_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRBACHasNoWildcards reads every Role and ClusterRole Steward installs
// (config/rbac: the generated manager role and the hand-written
// leader-election role) and fails on a wildcard verb, resource, API group
// or non-resource URL: every permission is named.
func TestRBACHasNoWildcards(t *testing.T) {
	files, err := filepath.Glob("../../config/rbac/*role.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("role files: %v, %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(data, &role); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(role.Rules) == 0 {
			t.Errorf("%s: %s has no rules", f, role.Kind)
		}
		for i, r := range role.Rules {
			for field, values := range map[string][]string{
				"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups,
				"nonResourceURLs": r.NonResourceURLs, "resourceNames": r.ResourceNames,
			} {
				if slices.ContainsFunc(values, func(v string) bool { return v == rbacv1.VerbAll || v == "*/*" }) {
					t.Errorf("%s: %s rule %d has a wildcard in %s: %v", f, role.Kind, i, field, values)
				}
			}
			if slices.Contains(r.Verbs, "escalate") || slices.Contains(r.Verbs, "bind") || slices.Contains(r.Verbs, "impersonate") {
				t.Errorf("%s: %s rule %d grants %v", f, role.Kind, i, r.Verbs)
			}
		}
	}
}
