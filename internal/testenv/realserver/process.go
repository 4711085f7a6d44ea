package realserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tailLines is how many lines of a server's output errors and failed tests
// show.
const tailLines = 40

// Supervisor runs one server's process, one run at a time (again after it
// ended, like a pod restarting), every run's output appended to LogPath.
// Its methods are safe for concurrent use.
type Supervisor struct {
	// Harness prefixes log lines and messages: the harness package's name.
	Harness string
	// Name is the server in errors and messages: "server 2", "versitygw".
	Name string
	// LogPath is the file that holds the server's output.
	LogPath string

	mu   sync.Mutex
	proc *Process // the last run; nil before the first
}

// Process is one run of a server.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	err  error         // its exit status, once done is closed
}

// Start starts cmd and returns at once; it is an error while a run is
// running. The process gets its own process group, so that
// [Process.SignalGroup] reaches whatever it forked, and SIGKILL as its
// parent-death signal: should the test process die without cleaning up,
// the server dies with it. Its output, after a line "=== <Harness>:
// <header> at <time>", is appended to LogPath.
func (s *Supervisor) Start(cmd *exec.Cmd, header string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc.running() {
		return fmt.Errorf("%s is running", s.Name)
	}
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.Name, err)
	}
	fmt.Fprintf(logFile, "=== %s: %s at %s\n", s.Harness, header, time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	s.proc = p
	return nil
}

// Running returns the running process, or nil (a paused one runs).
func (s *Supervisor) Running() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.proc.running() {
		return nil
	}
	return s.proc
}

// WaitServing calls probe every interval until it returns nil, or ctx
// ends. It fails at once when the process is not running, with the end of
// its output.
func (s *Supervisor) WaitServing(ctx context.Context, interval time.Duration, probe func(context.Context) error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if s.Running() == nil {
			return s.exited()
		}
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not serve (%w): %w", s.Name, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// exited is the error of a server that is not running.
func (s *Supervisor) exited() error {
	s.mu.Lock()
	exit := "exit status 0"
	if s.proc != nil && s.proc.err != nil {
		exit = s.proc.err.Error()
	}
	s.mu.Unlock()
	return fmt.Errorf("%s is not running (%s); its output ends with:\n%s", s.Name, exit, s.Tail())
}

// Stop stops the running process: SIGTERM to its group, then, if it has not
// exited after timeout, SIGKILL. Stopping a server that does not run does
// nothing.
func (s *Supervisor) Stop(timeout time.Duration) {
	p := s.Running()
	if p == nil {
		return
	}
	_ = p.SignalGroup(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(timeout):
	}
	_ = p.SignalGroup(syscall.SIGKILL)
	<-p.done
}

// LogIfFailed logs the last lines of the server's output when t has
// failed: for a cleanup, after the server is stopped.
func (s *Supervisor) LogIfFailed(t testing.TB) {
	if t.Failed() {
		t.Logf("%s: last lines of %s's output (%s):\n%s", s.Harness, s.Name, s.LogPath, s.Tail())
	}
}

// Tail returns the last lines of the server's output, indented.
func (s *Supervisor) Tail() string {
	f, err := os.Open(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(no output: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > tailLines {
			lines = lines[1:]
		}
	}
	return "    " + strings.Join(lines, "\n    ")
}

// running reports whether p runs; a nil p does not.
func (p *Process) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Pid returns the process's pid, also its process group's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// SignalGroup sends sig to the process's group; a group that is gone
// already is no error.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Ports hands out ports free on 127.0.0.1, each once. The zero value is
// ready for use and safe for concurrent use.
type Ports struct {
	mu    sync.Mutex
	taken map[int]bool
}

// Take returns n distinct ports that are free on 127.0.0.1 now and were not
// handed out before. They are taken below the usual ephemeral range (32768
// and up), so that no outgoing connection (the servers' own among them)
// takes one between now and the moment a server binds it.
func (p *Ports) Take(n int) ([]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken == nil {
		p.taken = map[int]bool{}
	}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free ports on 127.0.0.1")
		}
		port := 20000 + rand.IntN(12000)
		if p.taken[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		p.taken[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}
