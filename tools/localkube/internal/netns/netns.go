package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is where iproute2 keeps named network namespaces.
const Dir = "/run/netns"

// Namespace is a named network namespace managed with iproute2.
type Namespace struct{ Name string }

// Path is the bind-mounted namespace file, as nsenter --net= expects it.
func (n Namespace) Path() string { return filepath.Join(Dir, n.Name) }

// Exists reports whether the namespace file is present.
func (n Namespace) Exists() bool {
	_, err := os.Stat(n.Path())
	return err == nil
}

// PIDs lists the processes whose network namespace this is, as
// `ip netns pids` finds them. None means nothing runs there.
func (n Namespace) PIDs() ([]string, error) {
	out, err := exec.Command("ip", "netns", "pids", n.Name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	return strings.Fields(string(out)), nil
}

// Create adds the namespace. It fails if it already exists.
func (n Namespace) Create() error { return run("ip", "netns", "add", n.Name) }

// Delete removes the namespace and, with it, every interface inside it.
// Deleting a namespace that does not exist is not an error.
func (n Namespace) Delete() error {
	if !n.Exists() {
		return nil
	}
	return run("ip", "netns", "delete", n.Name)
}

// Run runs a command inside the namespace and returns its combined output.
// It uses nsenter rather than "ip netns exec" so that the command shares the
// host's mount namespace.
func (n Namespace) Run(argv ...string) (string, error) {
	args := append([]string{"--net=" + n.Path(), "--"}, argv...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s (in netns %s): %w: %s", strings.Join(argv, " "), n.Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Command wraps argv so that it runs inside the namespace.
func (n Namespace) Command(argv ...string) []string {
	return append([]string{"nsenter", "--net=" + n.Path(), "--"}, argv...)
}

// DialContext opens a connection from inside the namespace. The socket is
// created on an OS thread switched into the namespace; a socket keeps the
// namespace it was created in, so the connection works from any goroutine.
func (n Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	target, err := os.Open(n.Path())
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", n.Name, err)
	}
	defer target.Close()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, err
	}
	defer self.Close()

	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is returned to the pool only if it is back in its own
		// namespace; otherwise it dies with this goroutine.
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("enter netns %s: %w", n.Name, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, address)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

// Resolver returns a DNS resolver that sends its queries to server (an
// address inside the namespace), never to the host's resolver.
func (n Namespace) Resolver(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return n.DialContext(ctx, network, server)
		},
	}
}

func run(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ErrNotRoot is returned by CheckRoot.
var ErrNotRoot = errors.New("localkube must run as root: it creates network namespaces, mounts and cgroups")

// CheckRoot fails unless the process runs with UID 0.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}
