package wiring

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// crd is what the wiring needs of a generated CustomResourceDefinition.
type crd struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
	} `json:"spec"`
}

// sample is the file name of the kind's sample: <system>_<version>_<kind>.yaml,
// the system being the first label of the API group.
func (c crd) sample() string {
	system, _, _ := strings.Cut(c.Spec.Group, ".")
	version := ""
	for _, v := range c.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	return fmt.Sprintf("%s_%s_%s.yaml", system, version, strings.ToLower(c.Spec.Names.Kind))
}

// CreatedByAnnotation marks the CRD of a kind only the operator creates
// (OceanBase's OBZone and OBServer, views of a cluster): it has no sample,
// and the chart's NOTES do not tell users to apply one.
const CreatedByAnnotation = "steward.dev/created-by"

// TestEveryKindHasASample checks that config/samples holds one sample per
// kind of config/crd/bases users create (see CreatedByAnnotation), named
// <system>_<version>_<kind>.yaml, and nothing else: make wait-admission
// and the e2e suite dry-run them all, SYSTEMS picks them by name, and the
// chart's NOTES point at them.
func TestEveryKindHasASample(t *testing.T) {
	want := map[string]string{} // sample file -> apiVersion and kind it must hold
	crds := glob(t, "config/crd/bases/*.yaml")
	if len(crds) == 0 {
		t.Fatal("no CRD in config/crd/bases")
	}
	for _, path := range crds {
		var c crd
		readYAML(t, rel(path), &c)
		if c.Metadata.Annotations[CreatedByAnnotation] == "operator" {
			continue
		}
		name := c.sample()
		want[name] = fmt.Sprintf("%s/%s %s", c.Spec.Group, strings.Split(name, "_")[1], c.Spec.Names.Kind)
	}
	var got []string
	for _, path := range glob(t, "config/samples/*.yaml") {
		name := filepath.Base(path)
		got = append(got, name)
		kind, ok := want[name]
		if !ok {
			t.Errorf("config/samples/%s is no kind's sample (want <system>_<version>_<kind>.yaml of a CRD in config/crd/bases)", name)
			continue
		}
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		readYAML(t, rel(path), &obj)
		if g := obj.APIVersion + " " + obj.Kind; g != kind {
			t.Errorf("config/samples/%s holds %s, want %s", name, g, kind)
		}
	}
	for name, kind := range want {
		if !slices.Contains(got, name) {
			t.Errorf("%s has no sample: write config/samples/%s", kind, name)
		}
	}
}

// TestKustomizationListsEveryCRD checks that config/crd/kustomization.yaml
// (which make manifests writes) lists exactly the files of bases/.
func TestKustomizationListsEveryCRD(t *testing.T) {
	var k struct{ Resources []string }
	readYAML(t, "config/crd/kustomization.yaml", &k)
	var want []string
	for _, path := range glob(t, "config/crd/bases/*.yaml") {
		want = append(want, "bases/"+filepath.Base(path))
	}
	if !slices.Equal(k.Resources, want) {
		t.Errorf("config/crd/kustomization.yaml lists %v, want %v: run make manifests", k.Resources, want)
	}
}

// rel is path relative to the repository's root.
func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		panic(err)
	}
	return r
}
