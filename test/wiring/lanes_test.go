package wiring

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/internal/systems"
)

// The test lanes of docs/testing.md: what each make target builds before
// its first test.

// TestBuilderTestsNeedNoAPIServer checks that the tests of every builder
// package (internal/<system>/build/...) compile without envtest, the
// shared testenv and controller-runtime's manager (the framework's half),
// so that they compile in about a minute cold, run in seconds warm and
// need no API server: dry runs against a real one belong in the system's
// controller package, which has one.
func TestBuilderTestsNeedNoAPIServer(t *testing.T) {
	pkgs := goList(t, "list", "./internal/...")
	var builders []string
	for _, p := range pkgs {
		if strings.HasSuffix(p, "/build") || strings.Contains(p, "/build/") {
			builders = append(builders, p)
		}
	}
	if len(builders) < len(systems.Known()) {
		t.Fatalf("builder packages %v: want one per system %v at least", builders, systems.Known())
	}
	forbidden := []string{
		"sigs.k8s.io/controller-runtime/pkg/envtest",
		"sigs.k8s.io/controller-runtime/pkg/manager",
		"github.com/stewardhq/steward/internal/testenv",
	}
	for _, b := range builders {
		deps := goList(t, "list", "-test", "-deps", b)
		for _, f := range forbidden {
			if slices.Contains(deps, f) {
				t.Errorf("the tests of %s compile %s: move what needs it to the system's controller package", b, f)
			}
		}
	}
}

// TestMakeTestRunsUnitTestsBeforeImages checks, with make -n (which prints
// the commands without running them), that make test runs the unit and
// envtest tests before it builds any image, and make unit builds none.
func TestMakeTestRunsUnitTestsBeforeImages(t *testing.T) {
	for _, tc := range []struct {
		target    string
		wantImage bool
	}{
		{"unit", false},
		{"test", true},
	} {
		t.Run(tc.target, func(t *testing.T) {
			lines := strings.Split(makeOut(t, "-n", tc.target), "\n")
			// The command may start with environment assignments
			// (ZKTEST_DEFER=... go test ...).
			unit := slices.IndexFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, "go test ") || strings.Contains(l, " go test ")
			})
			image := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "hack/images.sh") })
			switch {
			case unit < 0:
				t.Errorf("make %s runs no go test", tc.target)
			case image >= 0 && !tc.wantImage:
				t.Errorf("make %s builds images: %.80s", tc.target, lines[image])
			case image >= 0 && image < unit:
				t.Errorf("make %s builds images (%.80s) before the unit tests (%.80s)", tc.target, lines[image], lines[unit])
			case image < 0 && tc.wantImage:
				t.Errorf("make %s builds no image, yet runs the end-to-end suite", tc.target)
			}
		})
	}
}

// TestDemoImagesLeavePreviewsOut checks the Makefile's PREVIEW_SYSTEMS
// against internal/systems and that DEFAULT_IMAGES, the images make demo
// builds, are the operator's and the default systems' but no preview's.
func TestDemoImagesLeavePreviewsOut(t *testing.T) {
	out := makeOut(t, "-s", "--eval", "lanes-print: ; @echo $(PREVIEW_SYSTEMS); echo $(DEFAULT_IMAGES)", "lanes-print")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("make printed %q", out)
	}
	if got, want := strings.Fields(lines[0]), systems.Preview(); !slices.Equal(got, want) {
		t.Errorf("the Makefile's PREVIEW_SYSTEMS are %v, internal/systems' previews %v", got, want)
	}
	images := strings.Fields(lines[1])
	if !slices.Contains(images, "steward") {
		t.Errorf("DEFAULT_IMAGES %v leave out the operator's", images)
	}
	for _, s := range systems.Known() {
		var has bool
		for _, image := range images {
			has = has || image == s || strings.HasPrefix(image, s+"-")
		}
		if has == systems.IsPreview(s) {
			t.Errorf("DEFAULT_IMAGES %v: %s's images included: %v, want %v", images, s, has, !systems.IsPreview(s))
		}
	}
}

// goList runs the go command with args in the repository and returns its
// output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// makeOut runs make with args in the repository, outside any make that
// runs this test, and returns its output.
func makeOut(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on the PATH")
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
