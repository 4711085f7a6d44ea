// Command chartgen writes the parts of the Helm chart that follow from the
// systems Steward knows (internal/systems): the pattern values.schema.json
// checks the systems value against, the chart's keywords, and the preview
// systems its "all" leaves out (templates/_helpers.tpl). make
// manifests runs it; its test fails while the chart is stale.
//
//	go run ./hack/chartgen charts/steward
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/stewardhq/steward/internal/systems"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chartgen CHART_DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1], current()); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

// names are the systems chartgen writes the chart for.
type names struct {
	known, preview []string
}

// current are internal/systems' names.
func current() names { return names{known: systems.Known(), preview: systems.Preview()} }

// A file's part that chartgen owns: what matches re, replaced by the
// function's result.
type part struct {
	file string
	re   *regexp.Regexp
	with func(n names) string
}

var parts = []part{
	{
		// The "pattern" of the "systems" property (the schema's first
		// property with a pattern after "systems").
		file: "values.schema.json",
		re:   regexp.MustCompile(`("systems":\s*\{[^}]*?"pattern":\s*)"[^"]*"`),
		with: func(n names) string { return `${1}` + quote(systemsPattern(n.known)) },
	},
	{
		// The keywords list of Chart.yaml.
		file: "Chart.yaml",
		re:   regexp.MustCompile(`(?m)^keywords:\n(?: {2}- .*\n)*`),
		with: func(n names) string {
			return "keywords:\n  - operator\n  - " + strings.Join(n.known, "\n  - ") + "\n"
		},
	},
	{
		// The preview systems, which steward.systemEnabled leaves out of
		// "all".
		file: "templates/_helpers.tpl",
		re:   regexp.MustCompile(`\{\{- \$preview := list[^}]*-\}\}`),
		with: func(n names) string {
			quoted := make([]string, len(n.preview))
			for i, name := range n.preview {
				quoted[i] = quote(name)
			}
			// $$: the result is a regexp replacement, where $ expands.
			return strings.TrimSpace("{{- $$preview := list "+strings.Join(quoted, " ")) + " -}}"
		},
	},
}

// systemsPattern accepts "all" or a comma-separated list of names, with
// spaces around the commas: what the operator's --systems flag accepts.
func systemsPattern(names []string) string {
	one := "(" + strings.Join(names, "|") + ")"
	return "^(all|" + one + "( *, *" + one + ")*)$"
}

// quote is a JSON string; the names need no escaping beyond what %q does
// for JSON's subset.
func quote(s string) string { return fmt.Sprintf("%q", s) }

// render returns the chart's files with chartgen's parts brought up to date,
// keyed by file name, and says which differ from the files on disk.
func render(chartDir string, n names) (map[string][]byte, []string, error) {
	files := map[string][]byte{}
	var stale []string
	for _, p := range parts {
		old, ok := files[p.file]
		if !ok {
			var err error
			if old, err = os.ReadFile(filepath.Join(chartDir, p.file)); err != nil {
				return nil, nil, err
			}
		}
		if matches := p.re.FindAll(old, -1); len(matches) != 1 {
			return nil, nil, fmt.Errorf("%s: %d matches of %s, want 1", p.file, len(matches), p.re)
		}
		updated := p.re.ReplaceAll(old, []byte(p.with(n)))
		files[p.file] = updated
		if !bytes.Equal(updated, old) {
			stale = append(stale, p.file)
		}
	}
	return files, stale, nil
}

func write(chartDir string, n names) error {
	files, stale, err := render(chartDir, n)
	if err != nil {
		return err
	}
	for _, name := range stale {
		if err := os.WriteFile(filepath.Join(chartDir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
