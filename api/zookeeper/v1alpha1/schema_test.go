package v1alpha1_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/crd-spec.golden.json from the generated CRD")

// TestCRDSchemaIsStable pins the generated CRD's spec (names, versions,
// printer columns and the whole schema: types, defaults, bounds, CEL
// rules) with the descriptions left out. Stored ZookeeperClusters are
// validated and defaulted by it, so a refactoring of the Go types (such as
// moving fields into api/common) must leave it exactly as it was; a change
// that is meant updates the golden file with -update and is reviewed as
// an API change.
func TestCRDSchemaIsStable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(crdDir, "zookeeper.steward.dev_zookeeperclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec any `json:"spec"`
	}
	if err := unmarshalYAML(data, &crd); err != nil {
		t.Fatal(err)
	}
	got := withoutDescriptions(crd.Spec)
	golden := filepath.Join("testdata", "crd-spec.golden.json")
	if *updateGolden {
		out, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the CRD's schema changed (descriptions aside); existing objects may no longer validate or default the same.\n"+
			"If the change is meant, run go test ./api/zookeeper/v1alpha1 -run TestCRDSchemaIsStable -update.\n%s", diff.Diff(want, got))
	}
}

// withoutDescriptions returns v with every "description" key removed.
func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k != "description" {
				out[k] = withoutDescriptions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}
