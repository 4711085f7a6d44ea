package zktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testenv/realserver"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

const (
	// Heap is the servers' maximum heap (ZK_HEAP).
	Heap = "128m"
	// StartTimeout bounds how long [Start] and [Ensemble.Join] wait for
	// servers to serve.
	StartTimeout = 90 * time.Second
	// StopTimeout is how long [Server.Stop] waits for the JVM to exit on
	// SIGTERM before it kills it.
	StopTimeout = 10 * time.Second

	// hostName is every server's host name; /etc/hosts resolves it.
	hostName = "zktest"
	// uid and gid are the image's zookeeper user.
	uid, gid = 100, 101
	// tickTime in milliseconds: short, so that failures are noticed in
	// seconds, yet with initLimit and syncLimit generous enough for a
	// loaded 2-core machine.
	tickTime  = 500
	initLimit = 20
	syncLimit = 10
)

// SuperPassword is the password of the servers' super user, the one
// allowed to reconfigure (zkclient.WithSuperUser), as the operator's
// servers run.
const SuperPassword = "zktest-super"

// jvmOpts are the servers' ZK_JVM_OPTS: the super user's digest, as the
// controller sets it, so that reconfiguration needs the same
// authentication as in a cluster, and a JVM tuned to start quickly and
// stay small (one GC thread, the C1 compiler only, no perf data file).
var jvmOpts = strings.Join([]string{
	"-Dzookeeper.DigestAuthenticationProvider.superDigest=" + zkclient.SuperDigest(SuperPassword),
	"-Djava.net.preferIPv4Stack=true",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData",
	"-XX:ActiveProcessorCount=1",
}, " ")

// inner runs inside the new namespaces, on the host's root: it builds the
// server's view of the image (a read-only bind of the unpacked tree with the
// server's own /conf, /data, /tmp, /dev and /proc, the entrypoint from the
// repository) and execs the entrypoint there as the image's user, so that
// the JVM ends up PID 1 of its namespace. The user is switched by the
// image's setpriv, which also sets the parent-death signal again: changing
// the user clears the one unshare --kill-child set, and without it the JVM
// would outlive a killed test process. Arguments: the unpacked tree, the
// server's directory, the entrypoint, the user (uid:gid), then the
// environment.
const inner = `set -e
tree=$1; dir=$2; zkrun=$3; user=$4; shift 4
root=$dir/root
mount --bind "$tree" "$root"
mount -o remount,bind,ro "$root"
mount --bind "$dir/conf" "$root/conf"
mount -o remount,bind,ro "$root/conf"
mount --bind "$dir/data" "$root/data"
mount --bind "$zkrun" "$root/usr/local/bin/zk-run"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=0755,nosuid,size=1m tmpfs "$root/dev"
for d in null zero full random urandom; do
	touch "$root/dev/$d"
	mount --bind "/dev/$d" "$root/dev/$d"
done
ln -s /proc/self/fd "$root/dev/fd"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$root/tmp"
hostname ` + hostName + `
exec chroot "$root" /usr/bin/setpriv --reuid="${user%:*}" --regid="${user#*:}" --clear-groups --pdeathsig=KILL \
	-- /usr/bin/env -i --chdir=/data "$@" /usr/local/bin/zk-run`

// Ensemble is a set of real ZooKeeper servers started by [Start].
type Ensemble struct {
	t   testing.TB
	env environment
	dir string

	ports realserver.Ports

	mu      sync.Mutex
	servers []*Server
}

// Server is one real ZooKeeper server of an [Ensemble]. Its methods are safe
// for concurrent use and may be called from any test goroutine.
type Server struct {
	id                                              int
	clientPort, quorumPort, electionPort, adminPort int
	env                                             environment
	dir                                             string
	sup                                             *realserver.Supervisor

	mu     sync.Mutex // serializes Start
	starts int
}

// Start starts n real ZooKeeper servers forming one ensemble on 127.0.0.1
// and waits until every one of them serves (its AdminServer's stat command
// answers a server state), at most [StartTimeout]. One server runs
// standalone; more form an ensemble with standaloneEnabled=false, server
// ids 1..n, all participants. Everything is stopped and removed on
// t.Cleanup. Start must be called from the test's goroutine; it skips or
// fails the test when servers cannot run here (see the package
// documentation).
func Start(t testing.TB, n int) *Ensemble {
	t.Helper()
	if n < 1 {
		t.Fatalf("zktest.Start: %d servers, want at least 1", n)
	}
	e := newEnsemble(t)
	servers := make([]*Server, n)
	for i := range servers {
		s, err := e.newServer(i + 1)
		if err != nil {
			t.Fatalf("zktest.Start: %v", err)
		}
		servers[i] = s
	}
	members := make([]string, n)
	for i, s := range servers {
		members[i] = s.ConfigLine()
	}
	for _, s := range servers {
		if err := s.configure(members, n == 1); err != nil {
			t.Fatalf("zktest.Start: %v", err)
		}
	}
	for _, s := range servers {
		if err := s.Start(); err != nil {
			t.Fatalf("zktest.Start: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	start := time.Now()
	if err := e.WaitServing(ctx); err != nil {
		t.Fatalf("zktest.Start: %d servers: %v", n, err)
	}
	t.Logf("zktest: %d ZooKeeper server(s) serving after %s: client %s", n,
		time.Since(start).Round(time.Millisecond), strings.Join(e.ClientAddrs(), ","))
	return e
}

// DeferEnv names the environment variable that skips every test needing
// real servers, whatever CI says: make unit sets it, because it builds no
// image and make rootfs-tests, the lane after it, runs those tests with
// CI=true.
const DeferEnv = "ZKTEST_DEFER"

// newEnsemble checks that servers can run here and registers the cleanup.
func newEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	env := prepare()
	if !usable(t, env) {
		return nil
	}
	e := &Ensemble{t: t, env: env, dir: t.TempDir()}
	// Registered after t.TempDir, so it runs before the directory is
	// removed.
	t.Cleanup(e.cleanup)
	return e
}

// usable skips or fails t when servers cannot run; see the package
// documentation.
func usable(t testing.TB, env environment) bool {
	t.Helper()
	return realserver.Usable(t, "zktest", env.Status)
}

// cleanup kills every server and, when the test failed, logs their output.
func (e *Ensemble) cleanup() {
	servers := e.Servers()
	for _, s := range servers {
		s.kill()
	}
	if !e.t.Failed() {
		return
	}
	for _, s := range servers {
		s.sup.LogIfFailed(e.t)
	}
}

// newServer makes the directories and ports of server id.
func (e *Ensemble) newServer(id int) (*Server, error) {
	ports, err := e.ports.Take(4)
	if err != nil {
		return nil, err
	}
	s := &Server{
		id:           id,
		clientPort:   ports[0],
		quorumPort:   ports[1],
		electionPort: ports[2],
		adminPort:    ports[3],
		env:          e.env,
		dir:          filepath.Join(e.dir, fmt.Sprintf("server-%d", id)),
	}
	s.sup = &realserver.Supervisor{Harness: "zktest", Name: fmt.Sprintf("server %d", id), LogPath: s.LogPath()}
	for _, d := range []string{"root", "conf", "data"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("server %d: %w", id, err)
		}
	}
	data := filepath.Join(s.dir, "data")
	if err := os.Chown(data, uid, gid); err != nil {
		return nil, fmt.Errorf("server %d: %w", id, err)
	}
	if err := os.Chmod(data, 0o750); err != nil {
		return nil, fmt.Errorf("server %d: %w", id, err)
	}
	e.mu.Lock()
	e.servers = append(e.servers, s)
	e.mu.Unlock()
	return s, nil
}

// Join starts a new server, with the next unused id, to join the running
// ensemble: its initial dynamic configuration lists every server the
// ensemble has started, as participants, plus itself. It waits until the
// server serves, as a non-voting follower, at most [StartTimeout] or ctx's
// deadline; it is then ready for a reconfiguration that adds it, which is
// the caller's job ([Server.ConfigLine] is what to add). The server is stopped on
// t.Cleanup like the others.
func (e *Ensemble) Join(ctx context.Context) (*Server, error) {
	id := 0
	var members []string
	for _, s := range e.Servers() {
		id = max(id, s.id)
		members = append(members, s.ConfigLine())
	}
	s, err := e.newServer(id + 1)
	if err != nil {
		return nil, err
	}
	members = append(members, s.ConfigLine())
	if err := s.configure(members, false); err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := s.WaitServing(ctx); err != nil {
		return nil, fmt.Errorf("joining server %d: %w", s.id, err)
	}
	return s, nil
}

// Servers returns the servers in the order they were created.
func (e *Ensemble) Servers() []*Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Server(nil), e.servers...)
}

// Server returns the server with id, or nil.
func (e *Ensemble) Server(id int) *Server {
	for _, s := range e.Servers() {
		if s.id == id {
			return s
		}
	}
	return nil
}

// ClientAddrs returns every server's client address, host:port.
func (e *Ensemble) ClientAddrs() []string {
	var out []string
	for _, s := range e.Servers() {
		out = append(out, s.ClientAddr())
	}
	return out
}

// AdminAddrs returns every server's AdminServer address, host:port.
func (e *Ensemble) AdminAddrs() []string {
	var out []string
	for _, s := range e.Servers() {
		out = append(out, s.AdminAddr())
	}
	return out
}

// WaitServing waits until every running server serves, or ctx ends.
func (e *Ensemble) WaitServing(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, s := range e.Servers() {
		if !s.Running() {
			continue
		}
		wg.Go(func() {
			if err := s.WaitServing(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ID returns the server's id (its myid).
func (s *Server) ID() int { return s.id }

// ClientPort returns the port of the client protocol.
func (s *Server) ClientPort() int { return s.clientPort }

// QuorumPort returns the port followers connect to on the leader.
func (s *Server) QuorumPort() int { return s.quorumPort }

// ElectionPort returns the leader election port.
func (s *Server) ElectionPort() int { return s.electionPort }

// AdminPort returns the AdminServer's HTTP port.
func (s *Server) AdminPort() int { return s.adminPort }

// ClientAddr returns the client address, 127.0.0.1:port.
func (s *Server) ClientAddr() string { return addr(s.clientPort) }

// AdminAddr returns the AdminServer address, 127.0.0.1:port.
func (s *Server) AdminAddr() string { return addr(s.adminPort) }

// Spec returns the server's membership as a dynamic configuration line
// without its "server.N=" key:
// 127.0.0.1:quorumPort:electionPort:participant;127.0.0.1:clientPort.
func (s *Server) Spec() string {
	return fmt.Sprintf("%s:%d:%d:participant;%s", "127.0.0.1", s.quorumPort, s.electionPort, s.ClientAddr())
}

// ConfigLine returns the server's dynamic configuration line,
// server.N=[Server.Spec].
func (s *Server) ConfigLine() string { return fmt.Sprintf("server.%d=%s", s.id, s.Spec()) }

// LogPath returns the file holding the server's output, every run appended.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "server.log") }

// DataDir returns the host directory mounted at the server's /data.
func (s *Server) DataDir() string { return filepath.Join(s.dir, "data") }

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// configure writes the server's /conf: zoo.cfg, and zoo.cfg.dynamic with
// members, server.N lines.
func (s *Server) configure(members []string, standalone bool) error {
	cfg := fmt.Sprintf(`tickTime=%d
initLimit=%d
syncLimit=%d
dataDir=/data
reconfigEnabled=true
standaloneEnabled=%t
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=%d
`, tickTime, initLimit, syncLimit, standalone, s.adminPort)
	conf := filepath.Join(s.dir, "conf")
	if err := os.WriteFile(filepath.Join(conf, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("server %d: %w", s.id, err)
	}
	return s.writeDynamic(members)
}

// writeDynamic writes zoo.cfg.dynamic, server.N lines.
func (s *Server) writeDynamic(lines []string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	path := filepath.Join(s.dir, "conf", "zoo.cfg.dynamic")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("server %d: %w", s.id, err)
	}
	return nil
}

// Running reports whether the server's process runs (paused counts).
func (s *Server) Running() bool { return s.sup.Running() != nil }

// Start starts the server's process (again, after Stop or Kill, on the same
// data and configuration, like a pod restarting) and returns at once; see
// WaitServing. It is an error to start a running server.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{
		"--mount", "--uts", "--pid", "--fork", "--kill-child", "--propagation", "private",
		"/bin/sh", "-c", inner, "zktest-server",
		s.env.rootfs, s.dir, s.env.zkRun, fmt.Sprintf("%d:%d", uid, gid),
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + hostName,
		"ZK_MYID=" + strconv.Itoa(s.id),
		"ZK_HEAP=" + Heap,
		"ZK_JVM_OPTS=" + jvmOpts,
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	// The supervisor runs unshare in its own process group, so Pause and
	// Kill reach unshare and the JVM together, with a parent-death signal:
	// should the test process die without cleaning up, unshare dies and
	// --kill-child takes the JVM with it.
	if err := s.sup.Start(cmd, fmt.Sprintf("start %d of server %d", s.starts+1, s.id)); err != nil {
		return err
	}
	s.starts++
	return nil
}

// Stop stops the server the way the kubelet stops a container: SIGTERM to
// the JVM, then, if it has not exited after [StopTimeout], SIGKILL. A
// paused server is resumed so that it can handle SIGTERM. Stopping a server
// that does not run does nothing. The data directory stays.
func (s *Server) Stop() error {
	p := s.sup.Running()
	if p == nil {
		return nil
	}
	jvm := jvmPid(p)
	if jvm == 0 {
		return s.Kill()
	}
	if err := syscall.Kill(jvm, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping server %d: %w", s.id, err)
	}
	if err := p.SignalGroup(syscall.SIGCONT); err != nil {
		return fmt.Errorf("stopping server %d: %w", s.id, err)
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(StopTimeout):
		return s.Kill()
	}
}

// Kill kills the server's JVM with SIGKILL, as a node failure would, and
// waits until it is gone and its ports are free. Killing a server that does
// not run does nothing.
func (s *Server) Kill() error {
	p := s.sup.Running()
	if p == nil {
		return nil
	}
	// Killing the JVM, PID 1 of its namespace, ends the namespace; unshare
	// reaps it and exits. It is resumed in case it was paused.
	if jvm := jvmPid(p); jvm != 0 {
		if err := syscall.Kill(jvm, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing server %d: %w", s.id, err)
		}
		if err := p.SignalGroup(syscall.SIGCONT); err != nil {
			return fmt.Errorf("killing server %d: %w", s.id, err)
		}
		select {
		case <-p.Done():
			return nil
		case <-time.After(StopTimeout):
		}
	}
	if err := p.SignalGroup(syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing server %d: %w", s.id, err)
	}
	<-p.Done()
	return nil
}

// kill is Kill for cleanup: errors are moot there.
func (s *Server) kill() { _ = s.Kill() }

// Pause stops the server's JVM with SIGSTOP: it keeps its sockets open and
// accepts connections (the kernel does), but answers nothing, like a hung
// process. Resume undoes it.
func (s *Server) Pause() error {
	p := s.sup.Running()
	if p == nil {
		return fmt.Errorf("pausing server %d: not running", s.id)
	}
	if err := p.SignalGroup(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pausing server %d: %w", s.id, err)
	}
	return nil
}

// Resume continues a server stopped by Pause.
func (s *Server) Resume() error {
	p := s.sup.Running()
	if p == nil {
		return fmt.Errorf("resuming server %d: not running", s.id)
	}
	if err := p.SignalGroup(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resuming server %d: %w", s.id, err)
	}
	return nil
}

// jvmPid returns the host pid of the JVM (unshare's only child, which
// exec'd its way to java), or 0 when it cannot tell.
func jvmPid(p *realserver.Process) int {
	pid := p.Pid()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 1 {
		return 0
	}
	child, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return child
}

// WaitServing waits until the server serves requests: its AdminServer's
// stat command answers a server state rather than an error. It fails at
// once when the server's process exits, with the end of its output.
func (s *Server) WaitServing(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	return s.sup.WaitServing(ctx, 250*time.Millisecond, func(ctx context.Context) error {
		_, err := serverState(ctx, client, s.AdminAddr())
		return err
	})
}

// serverState asks the AdminServer at addr for its state. The zkclient
// package does this properly; this package does not import it, so that
// zkclient's own tests can use this one.
func serverState(ctx context.Context, client *http.Client, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/commands/stat", http.NoBody)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var stat struct {
		Error       *string `json:"error"`
		ServerStats *struct {
			ServerState string `json:"server_state"`
		} `json:"server_stats"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&stat); err != nil {
		return "", fmt.Errorf("stat: HTTP %d: %w", resp.StatusCode, err)
	}
	switch {
	case stat.Error != nil:
		return "", fmt.Errorf("stat: %s", *stat.Error)
	case stat.ServerStats == nil || stat.ServerStats.ServerState == "":
		return "", errors.New("stat: no server state")
	}
	return stat.ServerStats.ServerState, nil
}
