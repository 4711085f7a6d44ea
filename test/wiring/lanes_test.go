package wiring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestDefaultAndDemoImages checks the Makefile's PREVIEW_SYSTEMS against
// internal/systems, that DEFAULT_IMAGES (make images SYSTEMS=all) are the
// operator's and every default system's but no preview's, and that
// DEMO_IMAGES, what make demo builds, are those but the images of the
// systems DEMO_LEAVES_OUT names (MatrixOne among them, ZooKeeper not: make
// demo shows a ZooKeeper cluster).
func TestDefaultAndDemoImages(t *testing.T) {
	out := makeOut(t, "-s", "--eval", "lanes-print: ; @echo $(PREVIEW_SYSTEMS); echo $(DEMO_LEAVES_OUT); echo $(DEFAULT_IMAGES); echo $(DEMO_IMAGES)", "lanes-print")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("make printed %q", out)
	}
	if got, want := strings.Fields(lines[0]), systems.Preview(); !slices.Equal(got, want) {
		t.Errorf("the Makefile's PREVIEW_SYSTEMS are %v, internal/systems' previews %v", got, want)
	}
	leftOut := strings.Fields(lines[1])
	// MatrixOne's image builds MatrixOne from its Go module: make
	// demo-matrixone builds it, make demo stays quick.
	if !slices.Contains(leftOut, systems.MatrixOne) {
		t.Errorf("DEMO_LEAVES_OUT %v: make demo would build MatrixOne's image", leftOut)
	}
	for _, s := range leftOut {
		if !systems.IsKnown(s) || systems.IsPreview(s) || s == systems.ZooKeeper {
			t.Errorf("DEMO_LEAVES_OUT names %q: not a default system other than ZooKeeper", s)
		}
	}
	defaults, demo := strings.Fields(lines[2]), strings.Fields(lines[3])
	for name, images := range map[string][]string{"DEFAULT_IMAGES": defaults, "DEMO_IMAGES": demo} {
		if !slices.Contains(images, "steward") {
			t.Errorf("%s %v leave out the operator's", name, images)
		}
	}
	for _, s := range systems.Known() {
		hasImages := func(images []string) bool {
			return slices.ContainsFunc(images, func(image string) bool { return image == s || strings.HasPrefix(image, s+"-") })
		}
		if got, want := hasImages(defaults), !systems.IsPreview(s); got != want {
			t.Errorf("DEFAULT_IMAGES %v: %s's images included: %v, want %v", defaults, s, got, want)
		}
		if got, want := hasImages(demo), !systems.IsPreview(s) && !slices.Contains(leftOut, s); got != want {
			t.Errorf("DEMO_IMAGES %v: %s's images included: %v, want %v", demo, s, got, want)
		}
	}
	for _, image := range demo {
		if !slices.Contains(defaults, image) {
			t.Errorf("DEMO_IMAGES %v: %s is not among DEFAULT_IMAGES %v", demo, image, defaults)
		}
	}
}

// TestSystemImagesFollowTheirSystems checks the images that belong to no
// system by name (neither the operator's nor images/<system>*, such as
// versitygw, MatrixOne's object store): each is a known system's
// SYSTEM_IMAGES_<system> or SYSTEM_TEST_IMAGES_<system> in the Makefile,
// or staged; make images SYSTEMS=<system> builds that system's, and make
// images SYSTEMS=all's DEFAULT_IMAGES leave a preview's out, and test
// images; make demo's DEMO_IMAGES leave out those of DEMO_LEAVES_OUT.
func TestSystemImagesFollowTheirSystems(t *testing.T) {
	commands := []string{"echo staged $(STAGED_IMAGES)"}
	for _, s := range systems.Known() {
		commands = append(commands, fmt.Sprintf("echo %s $(SYSTEM_IMAGES_%s)", s, s),
			fmt.Sprintf("echo test-%s $(SYSTEM_TEST_IMAGES_%s)", s, s))
	}
	commands = append(commands, "echo default $(DEFAULT_IMAGES)", "echo demo $(DEMO_IMAGES)", "echo demo-leaves-out $(DEMO_LEAVES_OUT)")
	lists := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(makeOut(t, "-s", "--eval", "lanes-print: ; @"+strings.Join(commands, "; "), "lanes-print")), "\n") {
		fields := strings.Fields(line)
		lists[fields[0]] = fields[1:]
	}
	scripts, err := filepath.Glob(filepath.Join(root, "images", "*", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range scripts {
		name := filepath.Base(filepath.Dir(script))
		if name == "steward" || slices.ContainsFunc(systems.Known(), func(s string) bool { return name == s || strings.HasPrefix(name, s+"-") }) {
			continue
		}
		found := slices.Contains(lists["staged"], name)
		for _, s := range systems.Known() {
			found = found || slices.Contains(lists[s], name) || slices.Contains(lists["test-"+s], name)
		}
		if !found {
			t.Errorf("images/%s belongs to no system by name, and no SYSTEM_IMAGES_<system> or SYSTEM_TEST_IMAGES_<system> names it (nor STAGED_IMAGES): no make target builds it", name)
		}
	}
	// A system's test images are built with it, and make demo does not
	// load them unless a default system runs them besides its tests.
	runBy, demoRunBy := map[string]bool{}, map[string]bool{}
	for _, s := range systems.Known() {
		for _, image := range lists[s] {
			runBy[image] = runBy[image] || !systems.IsPreview(s)
			demoRunBy[image] = demoRunBy[image] || !systems.IsPreview(s) && !slices.Contains(lists["demo-leaves-out"], s)
		}
	}
	for _, s := range systems.Known() {
		images := strings.Fields(makeOut(t, "-s", "--eval", "lanes-print: ; @echo $(IMAGES)", "lanes-print", "SYSTEMS="+s))
		for _, image := range lists["test-"+s] {
			if !slices.Contains(images, image) {
				t.Errorf("make images SYSTEMS=%s builds %v, not %s (SYSTEM_TEST_IMAGES_%s)", s, images, image, s)
			}
			if slices.Contains(lists["default"], image) != runBy[image] {
				t.Errorf("DEFAULT_IMAGES %v: %s, a test image of %s, included: %v", lists["default"], image, s, !runBy[image])
			}
		}
		if len(lists[s]) == 0 {
			continue
		}
		for _, image := range lists[s] {
			if !slices.Contains(images, image) {
				t.Errorf("make images SYSTEMS=%s builds %v, not %s (SYSTEM_IMAGES_%s)", s, images, image, s)
			}
			if slices.Contains(lists["default"], image) == systems.IsPreview(s) {
				t.Errorf("DEFAULT_IMAGES %v: %s, %s's, included: %v, want %v", lists["default"], image, s, !systems.IsPreview(s), systems.IsPreview(s))
			}
			if got := slices.Contains(lists["demo"], image); got != demoRunBy[image] {
				t.Errorf("DEMO_IMAGES %v: %s, %s's, included: %v, want %v", lists["demo"], image, s, got, demoRunBy[image])
			}
		}
	}
	if len(lists[systems.MatrixOne]) == 0 {
		t.Errorf("no SYSTEM_IMAGES_%s: the pattern no longer finds versitygw", systems.MatrixOne)
	}
}

// TestRealServerTestsLanes checks where the tests that start real servers
// run: make unit defers them (ZKTEST_DEFER, S3TEST_DEFER: the S3 tests
// still run there when versitygw is already built), and make rootfs-tests
// runs every package whose tests use a harness of real servers, with CI
// true, s3test's own first and alone (its first test builds versitygw).
func TestRealServerTestsLanes(t *testing.T) {
	const module = "github.com/stewardhq/steward"
	harnesses := []string{module + "/internal/zookeeper/zktest", module + "/internal/s3/s3test"}
	var want []string
	for _, f := range goList(t, "list", "-f", `{{.ImportPath}}:{{join .TestImports ","}},{{join .XTestImports ","}}`, "./internal/...") {
		pkg, imports, _ := strings.Cut(f, ":")
		for _, h := range harnesses {
			if pkg == h || slices.Contains(strings.Split(imports, ","), h) {
				want = append(want, pkg)
				break
			}
		}
	}
	for _, h := range harnesses {
		if !slices.Contains(want, h) {
			t.Fatalf("no harness %s among the real-server packages %v", h, want)
		}
	}

	unit := goTestLines(makeOut(t, "-n", "unit"))
	if len(unit) != 1 || !strings.Contains(unit[0], `ZKTEST_DEFER="make rootfs-tests"`) || !strings.Contains(unit[0], `S3TEST_DEFER="make rootfs-tests"`) {
		t.Errorf("make unit's go test does not defer the real servers to make rootfs-tests: %.200q", unit)
	}

	lines := goTestLines(makeOut(t, "-n", "rootfs-tests"))
	if len(lines) != 2 {
		t.Fatalf("make rootfs-tests runs go test %d times, want 2: %q", len(lines), lines)
	}
	var got []string
	for i, l := range lines {
		if !strings.HasPrefix(l, "CI=true ") {
			t.Errorf("make rootfs-tests runs %q without CI=true", l)
		}
		_, pkgs, _ := strings.Cut(l, "go test ")
		fields := strings.Fields(pkgs)
		if i == 0 && !slices.Equal(fields, harnesses[1:]) {
			t.Errorf("make rootfs-tests runs %v first, want s3test alone", fields)
		}
		got = append(got, fields...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("make rootfs-tests runs %v, want the real-server packages %v", got, want)
	}
}

// goTestLines returns the lines of make -n's output that run go test.
func goTestLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "go test ") || strings.Contains(l, " go test ") {
			lines = append(lines, l)
		}
	}
	return lines
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
