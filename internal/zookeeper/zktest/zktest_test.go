package zktest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testenv/realserver"
)

// TestDeferred checks that ZKTEST_DEFER defers the tests to another lane
// before anything is looked for (or unpacked): realserver.Usable skips
// them, whatever CI says.
func TestDeferred(t *testing.T) {
	t.Setenv(DeferEnv, "make rootfs-tests")
	env := findEnvironment()
	want := realserver.Status{Deferred: "real servers deferred to another lane (ZKTEST_DEFER=make rootfs-tests)"}
	if env.Status != want || env.rootfs != "" {
		t.Errorf("findEnvironment() = %+v, want %+v", env, want)
	}
}

func TestNewestTarball(t *testing.T) {
	dir := t.TempDir()
	if got, err := newestTarball(dir); got != "" || err != nil {
		t.Errorf("newestTarball(empty) = %q, %v", got, err)
	}
	now := time.Now()
	for i, name := range []string{"zookeeper-rootfs-a.tar", "zookeeper-rootfs-b.tar", "other.tar"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// b is the newest rootfs; other.tar, newer still, is no rootfs.
		mod := now.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "zookeeper-rootfs-dir.tar"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := newestTarball(dir); err != nil || filepath.Base(got) != "zookeeper-rootfs-b.tar" {
		t.Errorf("newestTarball() = %q, %v; want zookeeper-rootfs-b.tar", got, err)
	}
}
