package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
)

const (
	// rootfsEnv names a root filesystem tarball to use instead of the cached
	// one in the repository.
	rootfsEnv = "ZKTEST_ROOTFS"
	// buildHint is how to get the root filesystem tarball.
	buildHint = "make images (or sudo images/zookeeper/build.sh)"
	// module is the Go module whose root holds .cache/images.
	module = "github.com/stewardhq/steward"
)

// environment is what running servers needs, found once per process.
type environment struct {
	// rootfs is the unpacked root filesystem.
	rootfs string
	// zkRun is the image's entrypoint in the repository.
	zkRun string
	// skip is why servers cannot run here; empty when they can.
	skip string
	// err is a failure to prepare what exists.
	err error
}

var (
	envOnce sync.Once
	env     environment
)

// prepare finds the tarball and the entrypoint and unpacks the tarball once
// per process (and once per tarball across processes).
func prepare() environment {
	envOnce.Do(func() { env = findEnvironment() })
	return env
}

func findEnvironment() environment {
	if runtime.GOOS != "linux" {
		return environment{skip: "real ZooKeeper servers need Linux namespaces"}
	}
	if os.Geteuid() != 0 {
		return environment{skip: "real ZooKeeper servers need root (chroot, namespaces, mounts)"}
	}
	for _, tool := range []string{"unshare", "chroot", "tar", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return environment{skip: fmt.Sprintf("real ZooKeeper servers need %s on the host", tool)}
		}
	}
	repo, err := repoRoot()
	if err != nil {
		return environment{err: err}
	}
	zkRun := filepath.Join(repo, "images", "zookeeper", "zk-run")
	if _, err := os.Stat(zkRun); err != nil {
		return environment{err: fmt.Errorf("the image entrypoint: %w", err)}
	}
	tarball := os.Getenv(rootfsEnv)
	if tarball == "" {
		tarball, err = newestTarball(filepath.Join(repo, ".cache", "images"))
		if err != nil {
			return environment{err: err}
		}
		if tarball == "" {
			return environment{skip: fmt.Sprintf("no ZooKeeper root filesystem in %s/.cache/images/zookeeper-rootfs-*.tar; build it with %s",
				repo, buildHint)}
		}
	}
	rootfs, err := unpack(tarball)
	if err != nil {
		return environment{err: err}
	}
	return environment{rootfs: rootfs, zkRun: zkRun}
}

// repoRoot walks up from the working directory (a test's package directory)
// to the directory whose go.mod declares the Steward module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module "+module+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// newestTarball returns the most recently modified root filesystem tarball in
// dir, or "" when there is none.
func newestTarball(dir string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "zookeeper-rootfs-*.tar"))
	if err != nil {
		return "", fmt.Errorf("looking for the root filesystem: %w", err)
	}
	type found struct {
		path string
		mod  int64
	}
	var files []found
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, found{m, fi.ModTime().UnixNano()})
	}
	if len(files) == 0 {
		return "", nil
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod > files[j].mod })
	return files[0].path, nil
}

// cacheDir is where unpacked root filesystems are kept.
func cacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "steward", "zktest")
	}
	return filepath.Join(os.TempDir(), "steward-zktest")
}

// unpack extracts tarball into the cache, unless an earlier process did, and
// returns the directory. Concurrent processes (go test runs packages in
// parallel) serialize on a lock file; the tree appears under its final name
// only once complete.
func unpack(tarball string) (string, error) {
	fi, err := os.Stat(tarball)
	if err != nil {
		return "", fmt.Errorf("the root filesystem tarball: %w", err)
	}
	cache := cacheDir()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("the root filesystem cache: %w", err)
	}
	// The name says what was built; size and time tell a rebuild apart.
	name := fmt.Sprintf("%s-%d-%d", strings.TrimSuffix(filepath.Base(tarball), ".tar"), fi.Size(), fi.ModTime().Unix())
	dir := filepath.Join(cache, name)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}

	lock, err := os.OpenFile(filepath.Join(cache, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("locking the root filesystem cache: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking the root filesystem cache: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil // another process unpacked it while we waited
	}

	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		return "", fmt.Errorf("unpacking the root filesystem: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	// The directory itself is the tree's root: it must be traversable by
	// the image's user like any /.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("unpacking the root filesystem: %w", err)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", tmp, "--numeric-owner").CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpacking %s: %w: %s", tarball, err, strings.TrimSpace(string(out)))
	}
	// Mount points for files the servers bind over the read-only tree:
	// the entrypoint (a separate image layer) and /etc/hosts (the kubelet
	// provides it in a pod; without it the JVM's host name lookups would
	// go to DNS).
	if err := os.MkdirAll(filepath.Join(tmp, "usr", "local", "bin"), 0o755); err != nil {
		return "", fmt.Errorf("preparing the root filesystem: %w", err)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
		data string
	}{
		{"usr/local/bin/zk-run", 0o755, ""},
		{"etc/hosts", 0o644, "127.0.0.1\tlocalhost " + hostName + "\n"},
	} {
		if err := os.WriteFile(filepath.Join(tmp, f.path), []byte(f.data), f.mode); err != nil {
			return "", fmt.Errorf("preparing the root filesystem: %w", err)
		}
	}
	for _, d := range []string{"conf", "data", "proc", "dev", "tmp"} {
		if fi, err := os.Stat(filepath.Join(tmp, d)); err != nil || !fi.IsDir() {
			return "", errors.Join(fmt.Errorf("the root filesystem has no /%s directory", d), err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("unpacking the root filesystem: %w", err)
	}
	ok = true
	return dir, nil
}
