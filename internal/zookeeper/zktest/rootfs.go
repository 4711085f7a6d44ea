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

	"github.com/stewardhq/steward/internal/testenv/realserver"
)

const (
	// rootfsEnv names a root filesystem tarball to use instead of the cached
	// one in the repository.
	rootfsEnv = "ZKTEST_ROOTFS"
	// buildHint is how to get the root filesystem tarball.
	buildHint = "make images (or sudo images/zookeeper/build.sh)"
)

// environment is what running servers needs, found once per process.
type environment struct {
	// Status is whether servers can run here.
	realserver.Status
	// rootfs is the unpacked root filesystem.
	rootfs string
	// zkRun is the image's entrypoint in the repository.
	zkRun string
}

// prepare finds the tarball and the entrypoint and unpacks the tarball once
// per process (and once per tarball across processes).
var prepare = sync.OnceValue(findEnvironment)

func findEnvironment() environment {
	if lane := os.Getenv(DeferEnv); lane != "" {
		return environment{Status: realserver.Status{
			Deferred: fmt.Sprintf("real servers deferred to another lane (%s=%s)", DeferEnv, lane)}}
	}
	if runtime.GOOS != "linux" {
		return skip("real ZooKeeper servers need Linux namespaces")
	}
	if os.Geteuid() != 0 {
		return skip("real ZooKeeper servers need root (chroot, namespaces, mounts)")
	}
	for _, tool := range []string{"unshare", "chroot", "tar", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return skip(fmt.Sprintf("real ZooKeeper servers need %s on the host", tool))
		}
	}
	repo, err := realserver.RepoRoot()
	if err != nil {
		return failed(err)
	}
	zkRun := filepath.Join(repo, "images", "zookeeper", "zk-run")
	if _, err := os.Stat(zkRun); err != nil {
		return failed(fmt.Errorf("the image entrypoint: %w", err))
	}
	tarball := os.Getenv(rootfsEnv)
	if tarball == "" {
		tarball, err = newestTarball(filepath.Join(repo, ".cache", "images"))
		if err != nil {
			return failed(err)
		}
		if tarball == "" {
			return skip(fmt.Sprintf("no ZooKeeper root filesystem in %s/.cache/images/zookeeper-rootfs-*.tar; build it with %s",
				repo, buildHint))
		}
	}
	rootfs, err := unpack(tarball)
	if err != nil {
		return failed(err)
	}
	return environment{rootfs: rootfs, zkRun: zkRun}
}

func skip(why string) environment  { return environment{Status: realserver.Status{Skip: why}} }
func failed(err error) environment { return environment{Status: realserver.Status{Err: err}} }

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

// unpack extracts tarball into the cache, unless an earlier process did, and
// returns the directory. Concurrent processes (go test runs packages in
// parallel) serialize on a lock file; the tree appears under its final name
// only once complete.
func unpack(tarball string) (string, error) {
	fi, err := os.Stat(tarball)
	if err != nil {
		return "", fmt.Errorf("the root filesystem tarball: %w", err)
	}
	cache := realserver.CacheDir("zktest")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("the root filesystem cache: %w", err)
	}
	// The name says what was built; size and time tell a rebuild apart.
	name := fmt.Sprintf("%s-%d-%d", strings.TrimSuffix(filepath.Base(tarball), ".tar"), fi.Size(), fi.ModTime().Unix())
	dir := filepath.Join(cache, name)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}

	err = realserver.Locked(filepath.Join(cache, name+".lock"), func() error {
		if _, err := os.Stat(dir); err == nil {
			return nil // another process unpacked it while this one waited
		}
		return unpackInto(tarball, cache, dir)
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// unpackInto extracts tarball into a new directory of cache, prepares it
// and renames it to dir once complete.
func unpackInto(tarball, cache, dir string) error {
	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		return fmt.Errorf("unpacking the root filesystem: %w", err)
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
		return fmt.Errorf("unpacking the root filesystem: %w", err)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", tmp, "--numeric-owner").CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking %s: %w: %s", tarball, err, strings.TrimSpace(string(out)))
	}
	// Mount points for files the servers bind over the read-only tree:
	// the entrypoint (a separate image layer) and /etc/hosts (the kubelet
	// provides it in a pod; without it the JVM's host name lookups would
	// go to DNS).
	if err := os.MkdirAll(filepath.Join(tmp, "usr", "local", "bin"), 0o755); err != nil {
		return fmt.Errorf("preparing the root filesystem: %w", err)
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
			return fmt.Errorf("preparing the root filesystem: %w", err)
		}
	}
	for _, d := range []string{"conf", "data", "proc", "dev", "tmp"} {
		if fi, err := os.Stat(filepath.Join(tmp, d)); err != nil || !fi.IsDir() {
			return errors.Join(fmt.Errorf("the root filesystem has no /%s directory", d), err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("unpacking the root filesystem: %w", err)
	}
	ok = true
	return nil
}
