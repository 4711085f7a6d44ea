package build

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKubernetesVersion(t *testing.T) {
	v, err := kubernetesVersion("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if v != "v1.36.3" {
		t.Errorf("version %s; the cluster binaries are pinned to v1.36.3", v)
	}
}

func TestStampedSkipsOnlyWhenKeyAndOutputMatch(t *testing.T) {
	dir := t.TempDir()
	b := Builder{BinDir: dir}
	runs := 0
	build := func() error {
		runs++
		return os.WriteFile(filepath.Join(dir, "out"), []byte("x"), 0o644)
	}
	steps := []struct {
		key       string
		removeOut bool
		wantRuns  int
	}{
		{"k1", false, 1}, // first build
		{"k1", false, 1}, // same key: skipped
		{"k2", false, 2}, // inputs changed
		{"k2", true, 3},  // output deleted
	}
	for i, s := range steps {
		if s.removeOut {
			os.Remove(filepath.Join(dir, "out"))
		}
		if err := b.stamped("out", "out", s.key, build); err != nil {
			t.Fatal(err)
		}
		if runs != s.wantRuns {
			t.Fatalf("step %d: %d builds, want %d", i, runs, s.wantRuns)
		}
	}
}
