package realserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestUsable checks the rules: run when servers can; skip where they
// cannot, unless CI=true; skip whenever the tests are deferred to another
// lane, whatever CI says; fail on an error.
func TestUsable(t *testing.T) {
	cannot := Status{Skip: "no root filesystem; build it with make images"}
	deferred := Status{Deferred: "deferred to make rootfs-tests"}
	for _, tc := range []struct {
		name       string
		st         Status
		ci         string
		want       bool
		skip, fail string
	}{
		{name: "ready", want: true},
		{name: "ready on CI", ci: "true", want: true},
		{name: "cannot", st: cannot, skip: "h: no root filesystem"},
		{name: "cannot on CI", st: cannot, ci: "true", fail: "h: no root filesystem; build it with make images (CI=true: failing instead of skipping)"},
		{name: "CI not true", st: cannot, ci: "1", skip: "make images"},
		{name: "deferred", st: deferred, skip: "h: deferred to make rootfs-tests"},
		{name: "deferred on CI", st: deferred, ci: "true", skip: "deferred to make rootfs-tests"},
		{name: "broken", st: Status{Err: errors.New("unpacking: boom")}, fail: "h: unpacking: boom"},
		{name: "broken on CI", st: Status{Err: errors.New("unpacking: boom")}, ci: "true", fail: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(CIEnv, tc.ci)
			r := &recorder{TB: t}
			got := Usable(r, "h", tc.st)
			if got != tc.want || !contains(r.skipped, tc.skip) || !contains(r.failed, tc.fail) {
				t.Errorf("Usable() = %t, skipped %q, failed %q; want %t, skip with %q, fail with %q",
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

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv", "realserver", "doc.go")); err != nil {
		t.Errorf("RepoRoot() = %s: %v", root, err)
	}
}

func TestPorts(t *testing.T) {
	var p Ports
	seen := map[int]bool{}
	for range 3 {
		ports, err := p.Take(4)
		if err != nil || len(ports) != 4 {
			t.Fatalf("Take(4) = %v, %v", ports, err)
		}
		for _, port := range ports {
			if seen[port] || port < 20000 || port >= 32000 {
				t.Errorf("port %d: handed out twice, or outside 20000-31999", port)
			}
			seen[port] = true
		}
	}
}

// gone reports whether process pid has exited within a few seconds (a
// zombie has: nobody may reap it in a container).
func gone(pid string) bool {
	for range 50 {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return true
		}
		if _, after, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(after, "Z") {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestSupervisor runs a shell as a server: its output in the log, one run
// at a time, its whole process group stopped, a run that exits reported
// with its exit status and output.
func TestSupervisor(t *testing.T) {
	dir := t.TempDir()
	s := &Supervisor{Harness: "h", Name: "server 1", LogPath: filepath.Join(dir, "server.log")}
	// The shell forks sleep, which a signal to the shell alone would leave
	// behind.
	child := filepath.Join(dir, "child")
	if err := s.Start(exec.Command("/bin/sh", "-c", `sleep 60 & echo $! >"$0"; echo serving; wait`, child), "run 1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(time.Second) })
	p := s.Running()
	if p == nil {
		t.Fatal("not running after Start")
	}
	if err := s.Start(exec.Command("true"), "run 2"); err == nil || !strings.Contains(err.Error(), "server 1 is running") {
		t.Errorf("a second Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	probe := func(context.Context) error {
		if strings.Contains(s.Tail(), "serving") {
			return nil
		}
		return errors.New("not yet")
	}
	if err := s.WaitServing(ctx, 10*time.Millisecond, probe); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Tail(), "=== h: run 1 at ") {
		t.Errorf("no header in the log:\n%s", s.Tail())
	}
	start := time.Now()
	s.Stop(5 * time.Second)
	if d := time.Since(start); d >= 5*time.Second {
		t.Errorf("Stop took %s: SIGTERM did not reach the server's process group", d)
	}
	if s.Running() != nil {
		t.Error("running after Stop")
	}
	if pid, err := os.ReadFile(child); err != nil || !gone(strings.TrimSpace(string(pid))) {
		t.Errorf("the server's child (pid %s) outlived Stop: %v", pid, err)
	}

	if err := s.Start(exec.Command("/bin/sh", "-c", "echo broken; exit 3"), "run 2"); err != nil {
		t.Fatal(err)
	}
	<-s.Running().Done()
	err := s.WaitServing(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "server 1 is not running (exit status 3)") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("WaitServing of an exited run: %v", err)
	}
}
