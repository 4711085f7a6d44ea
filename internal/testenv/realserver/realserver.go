package realserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CIEnv names the environment variable that, set to "true", turns a skip
// into a failure.
const CIEnv = "CI"

// module is the Go module whose root [RepoRoot] finds.
const module = "github.com/stewardhq/steward"

// Status is whether a harness's servers can run here, found once per
// process. At most one of its fields is set; none when they can run.
type Status struct {
	// Deferred says why and to which lane the tests are deferred: they
	// skip, whatever CI says.
	Deferred string
	// Err is a failure of what should work: the tests fail.
	Err error
	// Skip is why servers cannot run here: the tests skip, or fail with
	// CI=true.
	Skip string
}

// Usable skips or fails t as st says, its messages prefixed with harness
// (the package's name), and returns whether servers can run. t.Skipf and
// t.Fatalf do not return, except in tests of the rules.
func Usable(t testing.TB, harness string, st Status) bool {
	t.Helper()
	switch {
	case st.Deferred != "":
		t.Skipf("%s: %s", harness, st.Deferred)
	case st.Err != nil:
		t.Fatalf("%s: %v", harness, st.Err)
	case st.Skip != "" && os.Getenv(CIEnv) == "true":
		t.Fatalf("%s: %s (%s=true: failing instead of skipping)", harness, st.Skip, CIEnv)
	case st.Skip != "":
		t.Skipf("%s: %s", harness, st.Skip)
	default:
		return true
	}
	return false
}

// RepoRoot walks up from the working directory (a test's package
// directory) to the directory whose go.mod declares the Steward module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+module+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// CacheDir is where harness keeps what outlives a test process (an
// unpacked root filesystem, a built binary): steward/<harness> in the
// user's cache directory.
func CacheDir(harness string) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "steward", harness)
	}
	return filepath.Join(os.TempDir(), "steward-"+harness)
}

// Locked runs fn holding an exclusive lock on the file at path (created if
// need be), so that parallel test processes (go test runs packages in
// parallel) fill a cache one at a time.
func Locked(path string, fn func() error) error {
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	return fn()
}
