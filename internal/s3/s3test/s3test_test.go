package s3test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testenv/realserver"
)

// TestDeferred checks S3TEST_DEFER's message: the lane the tests are
// deferred to, which builds the binary.
func TestDeferred(t *testing.T) {
	want := "no versitygw binary built yet; the tests that need one are deferred to make rootfs-tests (S3TEST_DEFER), which builds it"
	if got := deferred("make rootfs-tests"); got != want {
		t.Errorf("deferred() = %q, want %q", got, want)
	}
}

func TestPinnedVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ goMod, want string }{
		{"module x\n\nrequire (\n\tgithub.com/versity/versitygw v1.8.0 // indirect\n)\n", "v1.8.0"},
		{"module x\n\nrequire github.com/versity/versitygw v1.9.1\n", "v1.9.1"},
		{"module x\n\nrequire github.com/versity/versitygw-other v1.0.0\n", ""},
	} {
		path := filepath.Join(dir, "go.mod")
		if err := os.WriteFile(path, []byte(tc.goMod), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := pinnedVersion(path)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("pinnedVersion(%q) = %q, %v; want %q", tc.goMod, got, err, tc.want)
		}
	}
	// The repository's own pin is found.
	repo, err := realserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := pinnedVersion(filepath.Join(repo, "images", "versitygw", "go.mod")); err != nil || !strings.HasPrefix(v, "v") {
		t.Errorf("images/versitygw/go.mod: %q, %v", v, err)
	}
}

// TestServer starts a server, checks that it serves on 127.0.0.1 with its
// root where it says, and that its cleanup leaves no process behind.
func TestServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		scheme string
	}{
		{"http", nil, "http://127.0.0.1:"},
		{"https", []Option{WithTLS()}, "https://127.0.0.1:"},
	} {
		var pid int
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, tc.opts...)
			if !strings.HasPrefix(s.Endpoint(), tc.scheme) {
				t.Errorf("endpoint %s, want %s...", s.Endpoint(), tc.scheme)
			}
			if (s.CABundle() != nil) != (tc.scheme == "https://127.0.0.1:") {
				t.Errorf("CA bundle %q", s.CABundle())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.health(ctx, s.httpClient()); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(s.Root()); err != nil || !fi.IsDir() {
				t.Errorf("root %s: %v", s.Root(), err)
			}
			loc := s.Location("bucket-a", "p")
			if loc.Endpoint != s.Endpoint() || !loc.PathStyle || loc.Region != Region || loc.Credentials == nil {
				t.Errorf("Location = %+v", loc)
			}
			pid = s.sup.Running().Pid()
		})
		if pid == 0 {
			continue // skipped
		}
		// The subtest's cleanup has run: the server is gone (and reaped).
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: versitygw (pid %d) outlived its test: %v", tc.name, pid, err)
		}
	}
}
