package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/internal/systems"
)

const chartDir = "../../charts/steward"

// TestChartIsCurrent fails while the chart's systems pattern or keywords
// lag behind internal/systems: make manifests (go run ./hack/chartgen
// charts/steward) brings them up to date.
func TestChartIsCurrent(t *testing.T) {
	_, stale, err := render(chartDir, current())
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("charts/steward/%s are stale: run make manifests", strings.Join(stale, ", charts/steward/"))
	}
}

// TestPattern checks what the generated pattern accepts, as the chart's
// schema reads it, against the operator's own parsing of --systems.
func TestPattern(t *testing.T) {
	names := systems.Known()
	files, _, err := render(chartDir, current())
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Systems struct{ Pattern string }
		}
	}
	if err := json.Unmarshal(files["values.schema.json"], &schema); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(schema.Properties.Systems.Pattern)
	for _, v := range []string{"all", "zookeeper", "gpss,zookeeper", "gpss , zookeeper", strings.Join(names, ",")} {
		if !re.MatchString(v) {
			t.Errorf("systems=%q is rejected", v)
		}
	}
	for _, v := range []string{"", "etcd", "all,zookeeper", "zookeeper,", "ZooKeeper", "zookeeper etcd"} {
		if re.MatchString(v) {
			t.Errorf("systems=%q is accepted", v)
		}
	}

	var chart struct{ Keywords []string }
	if err := yaml.Unmarshal(files["Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if want := append([]string{"operator"}, names...); !slices.Equal(chart.Keywords, want) {
		t.Errorf("keywords %v, want %v", chart.Keywords, want)
	}
}

// TestWriteUpdatesOnlyItsParts regenerates a copy of the chart for another
// list of systems: the pattern and keywords change, nothing else does.
func TestWriteUpdatesOnlyItsParts(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"values.schema.json", "Chart.yaml", "templates/_helpers.tpl"} {
		data, err := os.ReadFile(filepath.Join(chartDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := names{known: []string{"alpha", "beta"}, preview: []string{"beta"}}
	if err := write(dir, other); err != nil {
		t.Fatal(err)
	}
	schema, _ := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if !strings.Contains(string(schema), `"pattern": "^(all|(alpha|beta)( *, *(alpha|beta))*)$"`) {
		t.Errorf("the systems pattern was not rewritten:\n%s", schema)
	}
	if !strings.Contains(string(schema), `"pattern": "^(debug|info|error|[0-9]+)$"`) {
		t.Errorf("another property's pattern changed:\n%s", schema)
	}
	chart, _ := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if !strings.Contains(string(chart), "keywords:\n  - operator\n  - alpha\n  - beta\nhome:") {
		t.Errorf("the keywords were not rewritten:\n%s", chart)
	}
	helpers, _ := os.ReadFile(filepath.Join(dir, "templates", "_helpers.tpl"))
	if !strings.Contains(string(helpers), `{{- $preview := list "beta" -}}`) {
		t.Errorf("the preview systems were not rewritten:\n%s", helpers)
	}
	if _, stale, err := render(dir, other); err != nil || len(stale) > 0 {
		t.Errorf("a second run changes %v (%v)", stale, err)
	}
}
