package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Daemon is one long-running process of the cluster. Its PID file and log
// live in fixed places under the cluster's state directory.
type Daemon struct {
	Name    string
	PIDFile string
	LogFile string
}

// record is what a PID file holds: the PID and the process start time in
// clock ticks since boot (field 22 of /proc/PID/stat).
type record struct {
	pid       int
	startTime uint64
}

// Start launches argv in its own session with stdin closed and stdout and
// stderr appended to the daemon's log, and records its PID.
func (d Daemon) Start(argv, env []string) (int, error) {
	if err := os.MkdirAll(filepath.Dir(d.LogFile), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(d.PIDFile), 0o755); err != nil {
		return 0, err
	}
	logFile, err := os.OpenFile(d.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open log of %s: %w", d.Name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", d.Name, err)
	}
	pid := cmd.Process.Pid
	start, err := startTime(pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("read start time of %s: %w", d.Name, err)
	}
	// Reap the child in the background while this process lives; once it
	// exits the daemon is re-parented to init.
	go func() { _ = cmd.Wait() }()
	data := fmt.Sprintf("%d %d\n", pid, start)
	if err := os.WriteFile(d.PIDFile, []byte(data), 0o644); err != nil {
		return 0, fmt.Errorf("write PID file of %s: %w", d.Name, err)
	}
	return pid, nil
}

// PID returns the PID of the daemon when it is running, or 0.
func (d Daemon) PID() int {
	rec, err := d.read()
	if err != nil {
		return 0
	}
	if st, err := startTime(rec.pid); err != nil || st != rec.startTime {
		return 0
	}
	if isZombie(rec.pid) {
		return 0
	}
	return rec.pid
}

// Running reports whether the recorded process is still alive.
func (d Daemon) Running() bool { return d.PID() != 0 }

// Stop sends SIGTERM, waits up to grace for the process to exit, then sends
// SIGKILL. It removes the PID file. Stopping a daemon that is not running is
// not an error.
func (d Daemon) Stop(grace time.Duration) error {
	pid := d.PID()
	if pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, grace) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !waitGone(pid, 10*time.Second) {
				return fmt.Errorf("%s (PID %d) did not exit after SIGKILL", d.Name, pid)
			}
		}
	}
	if err := os.Remove(d.PIDFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Tail returns the last n lines of the daemon's log.
func (d Daemon) Tail(n int) string {
	data, err := os.ReadFile(d.LogFile)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (d Daemon) read() (record, error) {
	data, err := os.ReadFile(d.PIDFile)
	if err != nil {
		return record{}, err
	}
	var rec record
	if _, err := fmt.Sscanf(string(data), "%d %d", &rec.pid, &rec.startTime); err != nil {
		return record{}, fmt.Errorf("parse %s: %w", d.PIDFile, err)
	}
	return rec, nil
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := startTime(pid); err != nil || isZombie(pid) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// startTime reads the start time of pid from /proc/PID/stat. The command
// name (field 2) may contain spaces, so fields are counted after its ')'.
func startTime(pid int) (uint64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// fields[0] is field 3 (state); start time is field 22.
	return strconv.ParseUint(fields[19], 10, 64)
}

func isZombie(pid int) bool {
	fields, err := statFields(pid)
	return err == nil && fields[0] == "Z"
}

func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return fields, nil
}
