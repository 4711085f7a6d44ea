package s3test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestUsable checks the skip rules: run with a binary; skip when the
// build is deferred to another lane, whatever CI says; skip where the
// binary cannot be built, unless CI=true; fail on a broken S3TEST_BIN.
func TestUsable(t *testing.T) {
	noGo := environment{skip: "no versitygw in /cache/versitygw-v1.8.0 and no go command to build it"}
	for _, tc := range []struct {
		name       string
		env        environment
		ci         string
		want       bool
		skip, fail string
	}{
		{name: "a binary", env: environment{bin: "/x"}, want: true},
		{name: "a binary on CI", env: environment{bin: "/x"}, ci: "true", want: true},
		{name: "deferred", env: environment{deferred: "make rootfs-tests"}, skip: "deferred to make rootfs-tests"},
		{name: "deferred on CI", env: environment{deferred: "make rootfs-tests"}, ci: "true", skip: "deferred to make rootfs-tests"},
		{name: "no build", env: noGo, skip: "no go command"},
		{name: "no build on CI", env: noGo, ci: "true", fail: "CI=true"},
		{name: "CI not true", env: noGo, ci: "1", skip: "no go command"},
		{name: "a broken S3TEST_BIN", env: environment{err: errors.New("S3TEST_BIN=/nope: no such file")}, fail: "/nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
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
	repo, err := repoRoot()
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
			pid = s.running().cmd.Process.Pid
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
