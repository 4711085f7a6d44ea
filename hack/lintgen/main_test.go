package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const root = "../.."

// TestConfigIsCurrent fails while .golangci.yml's generated rules lag
// behind the tree: make manifests (go run ./hack/lintgen) brings them up
// to date.
func TestConfigIsCurrent(t *testing.T) {
	old, err := os.ReadFile(filepath.Join(root, config))
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate(os.DirFS(root), old)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(old) {
		t.Errorf("%s's generated depguard rules are stale: run make manifests", config)
	}
}

// goFile is a Go file with a package comment ending in marker (if any).
func goFile(pkg, marker string) *fstest.MapFile {
	s := "// Package " + pkg + " is a package.\n"
	if marker != "" {
		s += "//\n// " + marker + "\n"
	}
	return &fstest.MapFile{Data: []byte(s + "package " + pkg + "\n")}
}

// fiveSystems is a tree with a system added to the four of today's, with a
// package of every role.
func fiveSystems() fstest.MapFS {
	fsys := fstest.MapFS{
		"api/common/v1alpha1/doc.go":     goFile("v1alpha1", ""),
		"internal/zookeeper/doc.go":      goFile("zookeeper", ""),
		"internal/zookeeper/zktest/a.go": goFile("zktest", "+steward:role=testing"),
		"cmd/steward/main.go":            goFile("main", ""),
		"cmd/foosim/main.go":             goFile("main", "+steward:role=testing"),
		"internal/foo/doc.go":            goFile("foo", ""),
		"internal/foo/build/doc.go":      goFile("build", "+steward:role=builder"),
		"internal/foo/fooclient/doc.go":  goFile("fooclient", "+steward:role=client"),
		// A role in any non-test file; a test file's marker is not read.
		"internal/foo/foosim/sim.go":          goFile("foosim", "+steward:role=testing"),
		"internal/foo/foosim/sim_test.go":     goFile("foosim", "+steward:role=client"),
		"internal/foo/tenant/doc.go":          goFile("tenant", "+steward:role=controller"),
		"internal/foo/fooclient/wire/wire.go": goFile("wire", ""),
		// A shared package and its harness.
		"internal/s3/doc.go":        goFile("s3", "+steward:role=client"),
		"internal/s3/s3test/doc.go": goFile("s3test", "+steward:role=testing"),
		// A shared package without a role, and its testing subpackage.
		"internal/testenv/doc.go":            goFile("testenv", ""),
		"internal/testenv/realserver/doc.go": goFile("realserver", "+steward:role=testing"),
	}
	for _, s := range []string{"foo", "gpss", "matrixone", "oceanbase", "zookeeper"} {
		fsys["api/"+s+"/v1alpha1/doc.go"] = goFile("v1alpha1", "")
	}
	return fsys
}

// TestScan checks what lintgen reads of a tree, and that a package without
// a role (or with a wrong one) stops it.
func TestScan(t *testing.T) {
	tests := []struct {
		name   string
		change func(fstest.MapFS)
		want   []string // in the rendered rules
		err    string
	}{{
		name: "a fifth system",
		want: []string{
			"foo-imports-no-other-system:\n",
			"- ${config-path}/internal/foo/**\n            - ${config-path}/api/foo/**\n",
			"- github.com/stewardhq/steward/internal/foo/\n",
			"- ${config-path}/internal/foo/fooclient/**\n",
			"- ${config-path}/internal/foo/build/**\n",
			`- "!${config-path}/internal/foo/foosim/**"` + "\n",
			`- "!${config-path}/cmd/foosim/**"` + "\n",
			"- pkg: github.com/stewardhq/steward/internal/foo/foosim\n",
			"- pkg: github.com/stewardhq/steward/internal/zookeeper/zktest\n",
			"zookeeper-imports-no-other-system:\n",
			"- github.com/stewardhq/steward/internal/s3$\n            - github.com/stewardhq/steward/internal/s3/\n",
			"- ${config-path}/internal/s3/**\n",
			`- "!${config-path}/internal/s3/s3test/**"` + "\n",
			"- pkg: github.com/stewardhq/steward/internal/s3/s3test\n",
			"- github.com/stewardhq/steward/internal/testenv$\n            - github.com/stewardhq/steward/internal/testenv/\n",
			`- "!${config-path}/internal/testenv/realserver/**"` + "\n",
			"- pkg: github.com/stewardhq/steward/internal/testenv/realserver\n",
		},
	}, {
		name:   "a shared package that says it is a controller",
		change: func(f fstest.MapFS) { f["internal/s3/doc.go"] = goFile("s3", "+steward:role=controller") },
		err:    "internal/s3: a shared package is no system's controller",
	}, {
		name:   "a package without a role",
		change: func(f fstest.MapFS) { f["internal/foo/fooclient/doc.go"] = goFile("fooclient", "") },
		err:    "internal/foo/fooclient: no role",
	}, {
		name:   "an unknown role",
		change: func(f fstest.MapFS) { f["internal/foo/fooclient/doc.go"] = goFile("fooclient", "+steward:role=wire") },
		err:    `unknown role "wire"`,
	}, {
		name:   "two roles",
		change: func(f fstest.MapFS) { f["internal/foo/fooclient/b.go"] = goFile("fooclient", "+steward:role=testing") },
		err:    `internal/foo/fooclient/b.go says "testing"`,
	}, {
		name:   "a command that is a client",
		change: func(f fstest.MapFS) { f["cmd/foosim/main.go"] = goFile("main", "+steward:role=client") },
		err:    "cmd/foosim: a command is a testing main or has no role",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fiveSystems()
			if tt.change != nil {
				tt.change(fsys)
			}
			tr, err := scan(fsys)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("scan: %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := tr.render()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("rules lack %q:\n%s", w, got)
				}
			}
			// Controllers get no rule of their own; test files and
			// subpackages of a role's package are not read for roles.
			for _, no := range []string{"internal/foo/tenant", "internal/foo/fooclient/wire"} {
				if strings.Contains(got, no) {
					t.Errorf("rules name %s:\n%s", no, got)
				}
			}
		})
	}
}

// TestSplice checks that only the lines between the markers change.
func TestSplice(t *testing.T) {
	cfg := "a:\n  " + begin + "\n  old\n  " + end + "\nb\n"
	got, err := splice([]byte(cfg), "  new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:\n  " + begin + "\n  new\n  " + end + "\nb\n"; string(got) != want {
		t.Errorf("splice = %q, want %q", got, want)
	}
	if _, err := splice([]byte("a: b\n"), ""); err == nil {
		t.Error("splice without the markers succeeded")
	}
}
