package zktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Skipf and Fatalf only record.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skipf(format string, a ...any)  { r.skipped = fmt.Sprintf(format, a...) }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

// TestUsable checks the skip rules: skip where servers cannot run, unless
// CI=true; skip whenever another lane runs them (ZKTEST_DEFER); and
// otherwise always fail on an error.
func TestUsable(t *testing.T) {
	noTarball := environment{skip: "no ZooKeeper root filesystem; build it with " + buildHint}
	for _, tc := range []struct {
		name        string
		env         environment
		ci, deferTo string
		want        bool
		skip, fail  string
	}{
		{name: "ready", env: environment{rootfs: "/x"}, want: true},
		{name: "no tarball", env: noTarball, skip: "make images"},
		{name: "no tarball on CI", env: noTarball, ci: "true", fail: "CI=true"},
		{name: "CI not true", env: noTarball, ci: "false", skip: "make images"},
		{name: "deferred on CI", env: noTarball, ci: "true", deferTo: "make rootfs-tests", skip: "deferred"},
		{name: "deferred while ready", env: environment{rootfs: "/x"}, deferTo: "make rootfs-tests", skip: "deferred"},
		{name: "broken tarball", env: environment{err: errors.New("unpacking: boom")}, fail: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(DeferEnv, tc.deferTo)
			r := &recorder{TB: t}
			got := usable(r, tc.env)
			if got != tc.want || !contains(r.skipped, tc.skip) || !contains(r.failed, tc.fail) {
				t.Errorf("usable() = %t, skipped %q, failed %q; want %t, skip with %q, fail with %q",
					got, r.skipped, r.failed, tc.want, tc.skip, tc.fail)
			}
		})
	}
}

// contains reports whether s contains sub, or both are empty.
func contains(s, sub string) bool {
	if sub == "" {
		return s == ""
	}
	return strings.Contains(s, sub)
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

func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "images", "zookeeper", "zk-run")); err != nil {
		t.Errorf("repoRoot() = %s: %v", root, err)
	}
}
