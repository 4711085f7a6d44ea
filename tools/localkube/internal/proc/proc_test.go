package proc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	d := Daemon{Name: "sleeper", PIDFile: filepath.Join(dir, "sleeper.pid"), LogFile: filepath.Join(dir, "sleeper.log")}
	if d.Running() {
		t.Fatal("a daemon that was never started reports running")
	}
	pid, err := d.Start([]string{"/bin/sh", "-c", "echo hello; exec sleep 60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.PID(); got != pid {
		t.Fatalf("PID() = %d, want %d", got, pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(d.Tail(5), "hello") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(d.Tail(5), "hello") {
		t.Fatalf("log tail %q lacks the daemon's output", d.Tail(5))
	}
	if err := d.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d.Running() {
		t.Fatal("daemon still running after Stop")
	}
	if err := d.Stop(time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestRecycledPIDIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	d := Daemon{Name: "x", PIDFile: filepath.Join(dir, "x.pid"), LogFile: filepath.Join(dir, "x.log")}
	// PID 1 exists, but it was not started at time 1, so it is not ours.
	if err := writeFile(d.PIDFile, "1 1\n"); err != nil {
		t.Fatal(err)
	}
	if d.Running() {
		t.Fatal("a PID file naming another process's PID must not count as running")
	}
}
