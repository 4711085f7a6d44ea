package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stewardhq/steward/tools/localkube/internal/netns"
)

// Up starts a new cluster and waits until its node is Ready and its DNS
// answers. On failure it names the component and prints its log's tail;
// what was started stays up for inspection until `down`.
func (c Config) Up(ctx context.Context, out io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	if err := netns.CheckRoot(); err != nil {
		return err
	}
	if err := c.checkBinaries(); err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.checkStale(); errors.Is(err, ErrStale) && c.orphaned() {
		fmt.Fprintf(out, "Cleaning up a cluster an earlier run left behind (%v)\n", err)
		if err := c.down(ctx, out); err != nil {
			return fmt.Errorf("clean up the cluster an earlier run left behind: %w", err)
		}
	} else if err != nil {
		return err
	}
	if err := checkPortFree(c.HostAPIAddress()); err != nil {
		return err
	}
	start := time.Now()
	if err := c.removeState(); err != nil {
		return err
	}
	if err := c.writeFiles(); err != nil {
		return err
	}
	if err := c.saveState(); err != nil {
		return err
	}
	if err := c.setupNetwork(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Network namespace %s ready (node address %s, no route off the machine)\n", c.NetNS, NodeIP)

	u := &upper{Config: c, out: out}
	for _, comp := range c.components() {
		if err := u.start(comp); err != nil {
			return err
		}
		if err := u.waitFor(ctx, comp.name); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "Cluster up in %s\n\n", time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "  export KUBECONFIG=%s\n  %s get nodes\n\nStop it with `localkube down`.\n", c.Kubeconfig(), c.Bin("kubectl"))
	return nil
}

// validate rejects settings no cluster could run with.
func (c Config) validate() error {
	if c.SimulatedNodes < 0 {
		return fmt.Errorf("--simulated-nodes %d: want 0 or more", c.SimulatedNodes)
	}
	if c.SimulatedPodCapacity < 1 {
		return fmt.Errorf("--simulated-pod-capacity %d: want 1 or more", c.SimulatedPodCapacity)
	}
	return nil
}

// upper carries the state of one `up` run.
type upper struct {
	Config
	out     io.Writer
	started []string
	client  *client
	// restarting is set when one component of a running cluster starts
	// again (Restart): what up creates in the cluster is there already.
	restarting bool
}

func (u *upper) start(comp component) error {
	argv := comp.argv(u.Config)
	if !comp.hostNetwork {
		argv = u.Namespace().Command(argv...)
	}
	d := u.Daemon(comp.name)
	pid, err := d.Start(argv, comp.env)
	if err != nil {
		return err
	}
	u.started = append(u.started, comp.name)
	fmt.Fprintf(u.out, "Started %s (PID %d)\n", comp.name, pid)
	return nil
}

// waitFor blocks until the component just started is serving.
func (u *upper) waitFor(ctx context.Context, name string) error {
	var err error
	switch name {
	case "forwarder":
		err = u.poll(ctx, 10*time.Second, func() error {
			conn, err := net.DialTimeout("tcp", u.HostAPIAddress(), time.Second)
			if err == nil {
				conn.Close()
			}
			return err
		})
	case "etcd":
		err = u.poll(ctx, 30*time.Second, func() error {
			conn, err := u.Namespace().DialContext(ctx, "tcp", "127.0.0.1:2379")
			if err == nil {
				conn.Close()
			}
			return err
		})
	case "kube-apiserver":
		if u.client, err = newClient(u.Kubeconfig()); err != nil {
			return err
		}
		err = u.poll(ctx, 90*time.Second, func() error { return u.client.readyz(ctx) })
		if err == nil && !u.restarting {
			err = u.client.bootstrap(ctx)
		}
	case "containerd":
		err = u.poll(ctx, 30*time.Second, func() error {
			_, err := os.Stat(u.ContainerdSocket())
			return err
		})
		if err == nil {
			err = u.LoadImage(u.Bin("pause.tar"))
		}
	case "kubelet":
		err = u.poll(ctx, 120*time.Second, func() error { return u.client.nodeReady(ctx, u.NodeName) })
	case "coredns":
		resolver := u.Namespace().Resolver(net.JoinHostPort(DNSServiceIP, "53"))
		err = u.poll(ctx, 60*time.Second, func() error {
			lookup, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			addrs, err := resolver.LookupHost(lookup, "kubernetes.default.svc."+ClusterDomain)
			if err == nil && (len(addrs) != 1 || addrs[0] != APIServiceIP) {
				err = fmt.Errorf("kubernetes.default resolved to %v, want %s", addrs, APIServiceIP)
			}
			return err
		})
	case "kwok":
		if err = u.client.createSimulatedNodes(ctx, u.SimulatedNodes, u.SimulatedPodCapacity); err == nil {
			err = u.poll(ctx, 60*time.Second, func() error { return u.client.simulatedNodesReady(ctx, u.SimulatedNodes) })
		}
	}
	if err != nil {
		return u.failure(name, err)
	}
	return nil
}

// poll calls check until it succeeds, the timeout passes, or a started
// daemon dies.
func (u *upper) poll(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if dead := u.deadDaemon(); dead != "" {
			return u.failure(dead, errors.New("exited"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (u *upper) deadDaemon() string {
	for _, name := range u.started {
		if !u.Daemon(name).Running() {
			return name
		}
	}
	return ""
}

// componentError names the component that failed and carries its log tail.
type componentError struct {
	Component string
	Log       string
	LogFile   string
	Err       error
}

func (e *componentError) Error() string {
	return fmt.Sprintf("%s failed: %v\n--- last lines of %s ---\n%s\n--- (stop what was started with `localkube down`)", e.Component, e.Err, e.LogFile, e.Log)
}

func (e *componentError) Unwrap() error { return e.Err }

func (u *upper) failure(name string, err error) error {
	var ce *componentError
	if errors.As(err, &ce) {
		return err
	}
	d := u.Daemon(name)
	return &componentError{Component: name, Log: d.Tail(30), LogFile: d.LogFile, Err: err}
}

// ErrStale means a cluster from an earlier run still holds resources.
var ErrStale = errors.New("a cluster from an earlier run is still present")

func (c Config) checkStale() error {
	var held []string
	if c.Namespace().Exists() {
		held = append(held, "network namespace "+c.NetNS)
	}
	for _, name := range c.allComponentNames() {
		if pid := c.Daemon(name).PID(); pid != 0 {
			held = append(held, fmt.Sprintf("%s (PID %d)", name, pid))
		}
	}
	if len(held) > 0 {
		return fmt.Errorf("%w (%s): run `localkube down` first", ErrStale, strings.Join(held, ", "))
	}
	return nil
}

// lock takes the cluster's lock file (beside RunDir), which up and down
// hold while they run: without it, an up that has made its namespace but
// started no daemon yet would look orphaned to another up, which would
// tear it down. It fails at once when another holds it.
func (c Config) lock() (unlock func(), err error) {
	path := filepath.Clean(c.RunDir) + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another localkube up, down or restart holds %s: %w", path, err)
	}
	return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// orphaned reports whether what an earlier run left holds no live process:
// no daemon it recorded runs, nothing runs in its network namespace, and no
// containerd shim of its socket is left. That is what a machine or a
// session that stopped leaves (its processes die, its namespace, mounts and
// state stay), and `down` is then all a user could do, so `up` does it.
// A cluster with any process alive is never touched.
func (c Config) orphaned() bool {
	for _, name := range c.allComponentNames() {
		if c.Daemon(name).Running() {
			return false
		}
	}
	if len(c.shimPIDs()) > 0 {
		return false
	}
	if !c.Namespace().Exists() {
		return true
	}
	pids, err := c.Namespace().PIDs()
	return err == nil && len(pids) == 0
}

func checkPortFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("port %s is in use (the API server is forwarded there; pick another with --api-port): %w", addr, err)
	}
	return ln.Close()
}

// LoadImage imports a docker-archive tarball into the node's containerd, in
// the namespace the kubelet uses.
func (c Config) LoadImage(archive string) error {
	out, err := exec.Command("ctr", "--address", c.ContainerdSocket(), "-n", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s: %w: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// savedState is what `up` records for `status` and `down`.
type savedState struct {
	SimulatedNodes       int       `json:"simulatedNodes"`
	SimulatedPodCapacity int       `json:"simulatedPodCapacity,omitempty"`
	APIPort              int       `json:"apiPort"`
	StartedAt            time.Time `json:"startedAt"`
}

func (c Config) saveState() error {
	data, err := json.Marshal(savedState{SimulatedNodes: c.SimulatedNodes, SimulatedPodCapacity: c.SimulatedPodCapacity,
		APIPort: c.APIPort, StartedAt: time.Now()})
	if err != nil {
		return err
	}
	return os.WriteFile(c.Path("cluster.json"), data, 0o644)
}

// LoadSaved fills in what `up` recorded about the running cluster.
func (c Config) LoadSaved() (Config, time.Time, error) {
	data, err := os.ReadFile(c.Path("cluster.json"))
	if err != nil {
		return c, time.Time{}, err
	}
	var s savedState
	if err := json.Unmarshal(data, &s); err != nil {
		return c, time.Time{}, err
	}
	c.SimulatedNodes, c.APIPort = s.SimulatedNodes, s.APIPort
	// A state written before the capacity was recorded keeps the default.
	if s.SimulatedPodCapacity > 0 {
		c.SimulatedPodCapacity = s.SimulatedPodCapacity
	}
	return c, s.StartedAt, nil
}
