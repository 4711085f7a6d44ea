package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sys/unix"
	criremote "k8s.io/cri-client/pkg"

	"github.com/stewardhq/steward/tools/localkube/internal/netns"
)

// Down stops exactly what Up started, by PID, removes the node's pod
// sandboxes through the CRI before containerd goes, unmounts whatever is
// left under the cluster's directories, removes the kubelet's cgroups and
// the network namespace (and with it every interface), and deletes the
// cluster's state. It keeps going past errors and reports them together.
func (c Config) Down(ctx context.Context, out io.Writer) error {
	return c.locked(func() error { return c.down(ctx, out) })
}

// locked runs fn as root with the cluster's lock held.
func (c Config) locked(fn func() error) error {
	if err := netns.CheckRoot(); err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// down is Down with the lock held.
func (c Config) down(ctx context.Context, out io.Writer) error {
	c, startedAt, _ := c.LoadSaved()
	var errs []error
	names := c.allComponentNames()
	slices.Reverse(names)
	for _, name := range names {
		d := c.Daemon(name)
		if name == "containerd" && d.Running() {
			if n, err := c.removePodSandboxes(ctx); err != nil {
				errs = append(errs, fmt.Errorf("remove pod sandboxes: %w", err))
			} else if n > 0 {
				fmt.Fprintf(out, "Removed %d pod sandboxes\n", n)
			}
		}
		pid := d.PID()
		if err := d.Stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		} else if pid != 0 {
			fmt.Fprintf(out, "Stopped %s (PID %d)\n", name, pid)
		}
	}
	if n := c.killShims(); n > 0 {
		fmt.Fprintf(out, "Stopped %d leftover containerd shims\n", n)
	}
	if err := c.unmountAll(startedAt); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroups("kubepods"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Namespace().Delete(); err != nil {
		errs = append(errs, err)
	}
	if err := c.removeState(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintln(out, "Cluster down; nothing left behind")
	return nil
}

// removePodSandboxes stops and removes every pod sandbox through the CRI, so
// that containerd tears down their network namespaces and mounts itself.
func (c Config) removePodSandboxes(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rt, err := criremote.NewRemoteRuntimeService(ctx, "unix://"+c.ContainerdSocket(), 30*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return 0, err
	}
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, sb := range sandboxes {
		if err := rt.StopPodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
		}
	}
	return len(sandboxes), errors.Join(errs...)
}

// killShims stops containerd shims that served this cluster's containerd
// and outlived it.
func (c Config) killShims() int {
	killed := 0
	for _, pid := range c.shimPIDs() {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// shimPIDs finds the containerd shims started for this cluster's containerd:
// their command line names its socket.
func (c Config) shimPIDs() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.Contains(args[0], "containerd-shim") && slices.Contains(args, c.ContainerdSocket()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// unmountAll detaches every mount under the cluster's directories, deepest
// first, and the pod network namespaces containerd made since the cluster
// started that are still bound under /run/netns.
func (c Config) unmountAll(startedAt time.Time) error {
	ours, err := c.ownMounts(startedAt)
	if err != nil {
		return err
	}
	sort.Slice(ours, func(i, j int) bool { return len(ours[i]) > len(ours[j]) })
	var errs []error
	for _, m := range ours {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
		if c.isPodNetns(m, startedAt) {
			_ = os.Remove(m)
		}
	}
	return errors.Join(errs...)
}

// ownMounts lists the mounts under the cluster's directories and, when the
// cluster's start time is known, the pod network namespaces made since.
func (c Config) ownMounts(startedAt time.Time) ([]string, error) {
	mounts, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var ours []string
	for _, m := range mounts {
		if under(m, c.StateDir) || under(m, c.RunDir) || c.isPodNetns(m, startedAt) {
			ours = append(ours, m)
		}
	}
	return ours, nil
}

func (c Config) isPodNetns(path string, startedAt time.Time) bool {
	if filepath.Dir(path) != netns.Dir || !strings.HasPrefix(filepath.Base(path), "cni-") || startedAt.IsZero() {
		return false
	}
	st, err := os.Lstat(path)
	return err == nil && !st.ModTime().Before(startedAt)
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// mountPoints lists the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	return points, s.Err()
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups removes the cgroup tree named top in every cgroup v1
// hierarchy (and in the unified one), deepest first. Only empty cgroups can
// be removed, so this never affects a running process.
func removeCgroups(top string) error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + top)
	if st, err := os.Stat("/sys/fs/cgroup/" + top); err == nil && st.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/"+top)
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, dir := range dirs {
			if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of a cluster is still on the machine: live daemons,
// mounts under its directories, its network namespace, pod network
// namespaces, the kubelet's cgroups and its directories. An empty list means
// `down` left nothing behind.
func (c Config) Leftovers() []string {
	var left []string
	for _, name := range c.allComponentNames() {
		if pid := c.Daemon(name).PID(); pid != 0 {
			left = append(left, fmt.Sprintf("process %s (PID %d)", name, pid))
		}
	}
	mounts, err := c.ownMounts(time.Time{})
	if err != nil {
		left = append(left, "unreadable mount table: "+err.Error())
	}
	for _, m := range mounts {
		left = append(left, "mount "+m)
	}
	if c.Namespace().Exists() {
		left = append(left, "network namespace "+c.NetNS)
	}
	if roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods"); len(roots) > 0 {
		left = append(left, "cgroups "+strings.Join(roots, ", "))
	}
	for _, dir := range []string{c.StateDir, c.RunDir} {
		if _, err := os.Stat(dir); err == nil {
			left = append(left, "directory "+dir)
		}
	}
	if n := len(c.shimPIDs()); n > 0 {
		left = append(left, fmt.Sprintf("%d containerd shims", n))
	}
	return left
}
