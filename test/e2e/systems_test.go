//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/systems"
)

// systemSpec is one system's end-to-end scenarios, in the style of
// cluster-api's e2e specs (a Spec(ctx, input) function per scenario): the
// system's own file (zookeeper_test.go) registers it from init with
// registerSystem, and TestSystems runs every registered system's specs,
// those of the systems E2E_SYSTEMS selects, as deep as E2E_DEPTH says.
type systemSpec struct {
	// addToScheme registers the system's kinds with crClient's scheme.
	addToScheme func(*runtime.Scheme) error
	// smoke is the system's smoke spec, which runs first, as
	// TestSystems/<system>/smoke, at both depths; every system has one.
	smoke smokeSpec
	// specs run in order at the full depth, each as
	// TestSystems/<system>/<name>; a failing one does not stop the next.
	specs []spec
	// chaos is the system's chaos spec, TestChaos/<system> (make chaos):
	// one cluster under a seeded run of random operations and faults;
	// nil while the system has none.
	chaos func(t *testing.T, in specInput, cfg chaosConfig)
}

// spec is one scenario of a system.
type spec struct {
	name string
	run  func(t *testing.T, in specInput)
}

// specInput is what the suite gives a system's specs.
type specInput struct {
	// System is the system's name.
	System string
	// Archives are the system's image archives found in the images
	// directory (_output/images): <system>.tar and <system>-*.tar, by
	// name without .tar.
	Archives map[string]string
}

// archive returns the path of the system's image archive name, failing the
// test when make images did not build it.
func (in specInput) archive(t *testing.T, name string) string {
	t.Helper()
	path, ok := in.Archives[name]
	if !ok {
		fatalf(t, "no %s.tar in %s (run make images)", name, env.imagesDir)
	}
	return path
}

// image returns the reference the system's image archive name is tagged
// with (the first tag of its manifest).
func (in specInput) image(t *testing.T, name string) string {
	t.Helper()
	return archiveImage(t, in.archive(t, name))
}

// systemSpecs holds the registered systems' specs, by system name.
var systemSpecs = map[string]systemSpec{}

// registerSystem registers a system's specs; it is called from init.
func registerSystem(name string, s systemSpec) {
	if !systems.IsKnown(name) {
		panic(fmt.Sprintf("e2e: registering specs of unknown system %q", name))
	}
	if _, dup := systemSpecs[name]; dup {
		panic(fmt.Sprintf("e2e: system %q registered twice", name))
	}
	if s.smoke.manifest == nil || s.smoke.request == nil {
		panic(fmt.Sprintf("e2e: system %q registers no smoke spec (docs/testing.md)", name))
	}
	systemSpecs[name] = s
}

// selectSystems resolves E2E_SYSTEMS ("make e2e SYSTEMS=..."), like the
// operator's --systems flag, against the systems built into the operator;
// empty is every one of them, previews included (CI tests them all), while
// "all" is the operator's "all", which leaves previews out. Every selected
// system must have registered its specs.
func selectSystems() error {
	spec := os.Getenv("E2E_SYSTEMS")
	builtin := manager.Builtin()
	names := spec
	if strings.TrimSpace(spec) == "" {
		names = strings.Join(builtin.Available(), ",")
	}
	selected, err := builtin.Select(names)
	if err != nil {
		return fmt.Errorf("E2E_SYSTEMS=%q: %w", spec, err)
	}
	env.systems = nil
	for _, s := range selected {
		if _, ok := systemSpecs[s.Name]; !ok {
			return fmt.Errorf("system %q is built into the operator but test/e2e registers no specs for it: add test/e2e/%s_test.go (docs/design/adding-a-system.md)", s.Name, s.Name)
		}
		env.systems = append(env.systems, s.Name)
	}
	fmt.Printf("Systems under test: %s (E2E_SYSTEMS=%q)\n", strings.Join(env.systems, ", "), spec)
	return nil
}

// selected reports whether the suite tests system.
func selected(system string) bool { return slices.Contains(env.systems, system) }

// systemInput returns system's specInput, and false when the suite does not
// test system.
func systemInput(system string) (specInput, bool) {
	if !selected(system) {
		return specInput{}, false
	}
	in := specInput{System: system, Archives: map[string]string{}}
	for name, path := range env.archives {
		if owner(name) == system {
			in.Archives[name] = path
		}
	}
	return in, true
}

// skipUnselected skips a test that needs system when the suite does not
// test it.
func skipUnselected(t *testing.T, system, needs string) specInput {
	t.Helper()
	in, ok := systemInput(system)
	if !ok {
		t.Skipf("%s needs %s, which E2E_SYSTEMS=%q does not select (make e2e SYSTEMS=...)", needs, system, os.Getenv("E2E_SYSTEMS"))
	}
	return in
}

// TestSystems runs the specs of every registered system: the selected
// systems' smoke, then at the full depth their other specs; the others
// skipped with the reason.
func TestSystems(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(systemSpecs)) {
		t.Run(name, func(t *testing.T) {
			in, ok := systemInput(name)
			switch {
			case !ok && slices.Contains(manager.Builtin().Available(), name):
				t.Skipf("%s is not selected by E2E_SYSTEMS=%q (make e2e SYSTEMS=...)", name, os.Getenv("E2E_SYSTEMS"))
			case !ok:
				t.Skipf("%s is not built into the operator (internal/manager Builtin)", name)
			}
			t.Run("smoke", func(t *testing.T) { systemSpecs[name].smoke.run(t, in) })
			if env.depth != depthFull {
				return
			}
			for _, s := range systemSpecs[name].specs {
				t.Run(s.name, func(t *testing.T) { s.run(t, in) })
			}
		})
	}
}

// owner is the system an image archive belongs to (zookeeper for
// zookeeper and zookeeper-*), or "" for the operator's and other images.
func owner(archive string) string {
	for _, s := range systems.Known() {
		if archive == s || strings.HasPrefix(archive, s+"-") {
			return s
		}
	}
	return ""
}

// findArchives lists the images directory's archives, by name without
// .tar.
func findArchives(dir string) (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, err
	}
	archives := map[string]string{}
	for _, p := range paths {
		archives[strings.TrimSuffix(filepath.Base(p), ".tar")] = p
	}
	return archives, nil
}

// systemImages are the images a system's specs run besides its own
// (images/<system>*), the Makefile's SYSTEM_IMAGES_<system>: MatrixOne's
// object store, versitygw (hack/versitygw.sh).
var systemImages = map[string][]string{systems.MatrixOne: {"versitygw"}}

// archivesToLoad are the archives the cluster needs: the operator's and
// every image that belongs to no system, and the selected systems'. The
// operator's must be there, and so must each selected system's images that
// images/ has a build.sh for, and its systemImages.
func archivesToLoad() ([]string, error) {
	var load []string
	for name, path := range env.archives {
		if o := owner(name); o == "" || selected(o) {
			load = append(load, path)
		}
	}
	want := []string{"steward"}
	for _, s := range env.systems {
		want = append(want, systemImages[s]...)
		builds, err := filepath.Glob(filepath.Join(env.root, "images", s+"*", "build.sh"))
		if err != nil {
			return nil, err
		}
		for _, b := range builds {
			if name := filepath.Base(filepath.Dir(b)); owner(name) == s {
				want = append(want, name)
			}
		}
	}
	for _, name := range want {
		if _, ok := env.archives[name]; !ok {
			return nil, fmt.Errorf("no %s.tar in %s (run make images)", name, env.imagesDir)
		}
	}
	slices.Sort(load)
	return load, nil
}

// samples are the files of config/samples of the selected systems, one per
// kind, named <system>_<version>_<kind>.yaml (test/wiring checks it).
func samples() ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(env.root, "config", "samples", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		system, _, _ := strings.Cut(filepath.Base(p), "_")
		if selected(system) {
			out = append(out, p)
		}
	}
	return out, nil
}

// archiveImage reads an image's tag from its archive's manifest.
func archiveImage(t *testing.T, archive string) string {
	t.Helper()
	return archiveTags(t, archive)[0]
}

// archiveTags reads the tags of an archive's images from its manifest, in
// its order, at least one (an archive of several images, the simulators',
// lists one entry each).
func archiveTags(t *testing.T, archive string) []string {
	t.Helper()
	out, err := command("tar", "-xOf", archive, "manifest.json")
	if err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	var manifest []struct{ RepoTags []string }
	if err := json.Unmarshal([]byte(out), &manifest); err != nil {
		fatalf(t, "manifest.json of %s: %v", archive, err)
	}
	var tags []string
	for _, image := range manifest {
		tags = append(tags, image.RepoTags...)
	}
	if len(tags) == 0 {
		fatalf(t, "manifest.json of %s names no image", archive)
	}
	return tags
}

// waitPodCount waits until exactly n pods of ns match selector.
func waitPodCount(t *testing.T, ns, selector string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d pods %s", n, selector), func(ctx context.Context) error {
		pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) != n {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		return nil
	})
}
