package wiring

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// localImage matches a reference to an image built on this machine.
var localImage = regexp.MustCompile(`localhost/([a-z0-9][a-z0-9._-]*):[A-Za-z0-9._-]+`)

// TestDefaultImagesAreBuilt finds every localhost/<name>:<tag> the API's
// Go code (defaults and +kubebuilder:default markers), the generated CRDs,
// the samples and hack's manifests (versitygw's) name, and the chart's
// default operator image, and checks that images/<name>/build.sh builds exactly that reference by default: a
// version bump on one side only fails here, not in an e2e run.
func TestDefaultImagesAreBuilt(t *testing.T) {
	refs := map[string][]string{} // reference -> files naming it
	fromAPI := 0
	err := filepath.WalkDir(filepath.Join(root, "api"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fromAPI += collect(t, refs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fromAPI == 0 {
		t.Fatal("no localhost/<name>:<tag> default image in api/: the pattern no longer finds them")
	}
	for _, pattern := range []string{"config/crd/bases/*.yaml", "config/samples/*.yaml", "hack/*.yaml"} {
		for _, path := range glob(t, pattern) {
			collect(t, refs, path)
		}
	}
	operator := chartImage(t)
	refs[operator] = append(refs[operator], "charts/steward (image.repository:appVersion)")

	tags := map[string][]string{} // image name -> the references its build.sh tags
	for ref, files := range refs {
		name := localImage.FindStringSubmatch(ref)[1]
		if _, ok := tags[name]; !ok {
			tags[name] = buildTags(t, name)
		}
		if !slices.Contains(tags[name], ref) {
			t.Errorf("%s names %s, but images/%s/build.sh builds %v by default", strings.Join(files, ", "), ref, name, tags[name])
		}
	}
}

// collect adds the local image references in the file at path to refs and
// returns how many it found.
func collect(t *testing.T, refs map[string][]string, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := localImage.FindAllString(string(data), -1)
	rel, _ := filepath.Rel(root, path)
	for _, ref := range slices.Compact(slices.Sorted(slices.Values(found))) {
		refs[ref] = append(refs[ref], rel)
	}
	return len(found)
}

// buildTags runs images/<name>/build.sh tag, with TAG unset; a system's
// part, images/<system>-<name> (images/oceanbase-obsim builds
// localhost/obsim), when there is no images/<name>.
func buildTags(t *testing.T, name string) []string {
	t.Helper()
	script := filepath.Join(root, "images", name, "build.sh")
	if _, err := os.Stat(script); err != nil {
		parts, _ := filepath.Glob(filepath.Join(root, "images", "*-"+name, "build.sh"))
		if len(parts) != 1 {
			t.Errorf("no %s (or one images/<system>-%s) to build localhost/%s: %v", script, name, name, err)
			return nil
		}
		script = parts[0]
	}
	// The script reads its directory (VERSION, say); reading it here too
	// lets go test's cache see a change there.
	err := filepath.WalkDir(filepath.Dir(script), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "tag")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TAG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s tag: %v", script, err)
	}
	return strings.Fields(string(out))
}

// chartImage is the operator image the chart installs by default.
func chartImage(t *testing.T) string {
	t.Helper()
	var values struct {
		Image struct{ Repository, Tag string }
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, "charts/steward/values.yaml", &values)
	readYAML(t, "charts/steward/Chart.yaml", &chart)
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	return values.Image.Repository + ":" + tag
}

func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
