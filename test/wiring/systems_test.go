package wiring

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/systems"
)

// TestEverySystemIsInItsPlaces checks the places of
// docs/design/adding-a-system.md that a test can check, for every system
// that has an API or is registered: a system that forgot one fails here.
func TestEverySystemIsInItsPlaces(t *testing.T) {
	for _, e := range missingPlaces(os.DirFS(root), manager.Builtin().Available(), systems.Known()) {
		t.Error(e)
	}
}

// registerSystem finds the e2e suite's registrations and the constants of
// internal/systems they name.
var (
	registerSystem = regexp.MustCompile(`registerSystem\(systems\.(\w+),`)
	systemConst    = regexp.MustCompile(`(?m)^\s*([A-Z]\w*)\s*=\s*"([a-z0-9]+)"`)
)

// missingPlaces returns a message for every place of adding-a-system.md a
// system lacks in fsys (the repository's tree). registered are the systems
// internal/manager's Builtin registers, known those of internal/systems.
func missingPlaces(fsys fs.FS, registered, known []string) []string {
	var missing []string
	miss := func(s, format string, args ...any) {
		missing = append(missing, s+": "+fmt.Sprintf(format, args...))
	}
	exists := func(p string) bool { _, err := fs.Stat(fsys, p); return err == nil }
	read := func(p string) string {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			missing = append(missing, err.Error())
		}
		return string(data)
	}

	// The systems: every API (but api/common) and every registered one.
	all := slices.Clone(registered)
	apis, err := fs.ReadDir(fsys, "api")
	if err != nil {
		return []string{err.Error()}
	}
	for _, e := range apis {
		if e.IsDir() && e.Name() != "common" && !slices.Contains(all, e.Name()) {
			all = append(all, e.Name())
		}
	}
	slices.Sort(all)

	// The systems the e2e suite registers, by the constants' values.
	consts := map[string]string{}
	for _, m := range systemConst.FindAllStringSubmatch(read("internal/systems/systems.go"), -1) {
		consts[m[1]] = m[2]
	}
	e2e := map[string]string{} // system -> file registering it
	files, _ := fs.Glob(fsys, "test/e2e/*_test.go")
	for _, f := range files {
		for _, m := range registerSystem.FindAllStringSubmatch(read(f), -1) {
			e2e[consts[m[1]]] = f
		}
	}

	var bench struct{ Systems string }
	if err := yaml.Unmarshal([]byte(read("bench/values.yaml")), &bench); err != nil {
		missing = append(missing, "bench/values.yaml: "+err.Error())
	}
	benched := strings.Split(strings.ReplaceAll(bench.Systems, " ", ""), ",")
	readme := read("README.md")
	lint := read(".golangci.yml")

	for _, s := range all {
		if !slices.Contains(known, s) {
			miss(s, "not in internal/systems' known list")
		}
		if !slices.Contains(registered, s) {
			miss(s, "internal/manager's Builtin() does not register it")
		}
		for _, dir := range []string{"api/" + s, "internal/" + s} {
			if !exists(dir) {
				miss(s, "no %s/", dir)
			}
		}
		// A system whose own program cannot run here has only parts
		// (images/gpss-simulator, images/oceanbase-obsim).
		if parts, _ := fs.Glob(fsys, "images/"+s+"-*/build.sh"); !exists(path.Join("images", s, "build.sh")) && len(parts) == 0 {
			miss(s, "no images/%s/build.sh (or images/%s-<part>/build.sh)", s, s)
		}
		if samples, _ := fs.Glob(fsys, "config/samples/"+s+"_*.yaml"); len(samples) == 0 {
			miss(s, "no config/samples/%s_<version>_<kind>.yaml", s)
		}
		if _, ok := e2e[s]; !ok {
			miss(s, "no registerSystem(systems.<Name>, ...) in test/e2e/*_test.go")
		}
		doc := "docs/" + s + ".md"
		if !exists(doc) {
			miss(s, "no %s", doc)
		}
		if !strings.Contains(readme, "("+doc+")") {
			miss(s, "README.md's status does not link %s", doc)
		}
		if exists("bench/"+s) && !slices.Contains(benched, s) {
			miss(s, "bench/%s has benchmarks, but bench/values.yaml's systems leave it out", s)
		}
		if !strings.Contains(lint, "\n        "+s+"-imports-no-other-system:\n") {
			miss(s, ".golangci.yml has no %s-imports-no-other-system rule: run make manifests", s)
		}
	}
	return missing
}

// oneSystem is a tree holding every place of a system foo.
func oneSystem() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"api/common/v1alpha1/doc.go":         file("package v1alpha1\n"),
		"api/foo/v1alpha1/types.go":          file("package v1alpha1\n"),
		"internal/foo/controller.go":         file("package foo\n"),
		"internal/systems/systems.go":        file("package systems\n\nconst (\n\tFoo = \"foo\"\n)\n"),
		"images/foo/build.sh":                file("#!/bin/sh\n"),
		"config/samples/foo_v1_foo.yaml":     file("kind: Foo\n"),
		"test/e2e/foo_test.go":               file("func init() {\n\tregisterSystem(systems.Foo, systemSpec{})\n}\n"),
		"docs/foo.md":                        file("# Foo\n"),
		"README.md":                          file("**Foo** ([docs/foo.md](docs/foo.md)).\n"),
		"bench/foo/doc.go":                   file("package foo\n"),
		"bench/values.yaml":                  file("systems: zookeeper, foo\n"),
		".golangci.yml":                      file("rules:\n        foo-imports-no-other-system:\n          files:\n"),
		"internal/foo/build/doc.go":          file("package build\n"),
		"config/samples/zookeeper_v1_x.yaml": file("kind: X\n"),
	}
}

// TestMissingPlaces leaves each place out of a system's tree in turn and
// checks that the wiring test names it.
func TestMissingPlaces(t *testing.T) {
	tests := []struct {
		name       string
		remove     []string // paths of the tree
		edit       map[string]string
		registered []string
		known      []string
		want       string
	}{
		{name: "complete"},
		{name: "known list", known: []string{}, want: "foo: not in internal/systems' known list"},
		{name: "manager", registered: []string{}, want: "foo: internal/manager's Builtin() does not register it"},
		{name: "API", remove: []string{"api/foo/v1alpha1/types.go"}, want: "foo: no api/foo/"},
		{name: "controllers", remove: []string{"internal/foo/controller.go", "internal/foo/build/doc.go"}, want: "foo: no internal/foo/"},
		{name: "image", remove: []string{"images/foo/build.sh"}, want: "foo: no images/foo/build.sh"},
		{
			name:   "an image of a part only",
			remove: []string{"images/foo/build.sh"},
			edit:   map[string]string{"images/foo-sim/build.sh": "#!/bin/sh\n"},
		},
		{name: "samples", remove: []string{"config/samples/foo_v1_foo.yaml"}, want: "foo: no config/samples/foo_"},
		{name: "e2e specs", remove: []string{"test/e2e/foo_test.go"}, want: "foo: no registerSystem"},
		{
			name: "e2e specs of another system",
			edit: map[string]string{"test/e2e/foo_test.go": "registerSystem(systems.ZooKeeper, systemSpec{})"},
			want: "foo: no registerSystem",
		},
		{name: "documentation", remove: []string{"docs/foo.md"}, want: "foo: no docs/foo.md"},
		{name: "README", edit: map[string]string{"README.md": "ZooKeeper only.\n"}, want: "foo: README.md's status does not link docs/foo.md"},
		{name: "benchmarks' values", edit: map[string]string{"bench/values.yaml": "systems: zookeeper\n"}, want: "foo: bench/foo has benchmarks"},
		{name: "lint rules", edit: map[string]string{".golangci.yml": "rules:\n"}, want: "foo: .golangci.yml has no foo-imports-no-other-system rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := oneSystem()
			for _, p := range tt.remove {
				delete(fsys, p)
			}
			for p, s := range tt.edit {
				fsys[p] = &fstest.MapFile{Data: []byte(s)}
			}
			registered, known := []string{"foo"}, []string{"foo", "zookeeper"}
			if tt.registered != nil {
				registered = tt.registered
			}
			if tt.known != nil {
				known = tt.known
			}
			got := missingPlaces(fsys, registered, known)
			if tt.want == "" {
				if len(got) > 0 {
					t.Fatalf("a complete system misses %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("missingPlaces = %q, want one message starting %q", got, tt.want)
			}
		})
	}
}
