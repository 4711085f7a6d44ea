package provisioner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// FilesystemParameter is the StorageClass parameter that gives its volumes
// a size of their own: "ext4" makes each an ext4 filesystem of the claim's
// size, in a sparse file beside the volume's directory and loop-mounted
// on it, so that a pod that fills the volume gets ENOSPC as on a disk of
// that size (the chaos suite's fill-volume fault). Such a volume does not
// grow: growing a mounted ext4 needs CAP_SYS_RESOURCE, which this
// machine's root lacks, so its StorageClass must not allow expansion
// (Resize refuses it). Without the parameter a volume is a directory of
// the node's disk, and its size a label.
const FilesystemParameter = "filesystem"

// imagePath is where a volume's filesystem image lives, beside its
// directory.
func imagePath(dir string) string { return dir + ".ext4" }

// makeFilesystem makes the image of size bytes and mounts it on dir, once:
// a provisioning retried after a crash finds what it made.
func makeFilesystem(dir string, size int64) error {
	img := imagePath(dir)
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		f, err := os.OpenFile(img+".new", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		err = f.Truncate(size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			// No reserved blocks: the pods' users may fill all of it.
			err = run("mkfs.ext4", "-q", "-F", "-m", "0", img+".new")
		}
		if err == nil {
			err = os.Rename(img+".new", img)
		}
		if err != nil {
			_ = os.Remove(img + ".new")
			return fmt.Errorf("make the volume's filesystem: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	// discard: space freed in the filesystem is freed in the image too.
	return run("mount", "-o", "loop,discard", img, dir)
}

// removeFilesystem unmounts dir and removes its image, if it has one.
func removeFilesystem(dir string) error {
	img := imagePath(dir)
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if mounted, err := isMountPoint(dir); err != nil {
		return err
	} else if mounted {
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return os.Remove(img)
}

// isMountPoint reports whether dir is a mount point: its device differs
// from its parent's.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Stat(dir+"/..", &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
