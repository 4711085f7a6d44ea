package provisioner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilesystemFills makes a real volume filesystem: it needs
// root (mount, losetup) and e2fsprogs, as localkube does.
func TestFilesystemFills(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting a volume's filesystem needs root")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 is not installed (e2fsprogs)")
	}
	dir := filepath.Join(t.TempDir(), "pvc-1")
	if err := makeFilesystem(dir, 16<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	// Made again, as a retried provisioning would: nothing changes.
	if err := makeFilesystem(dir, 16<<20); err != nil {
		t.Fatal(err)
	}
	if mounted, err := isMountPoint(dir); err != nil || !mounted {
		t.Fatalf("%s mounted: %t, %v", dir, mounted, err)
	}
	free := func() int64 {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	if f := free(); f < 10<<20 || f > 16<<20 {
		t.Fatalf("%d bytes free on a 16 MiB volume", f)
	}

	// Full is full: a write past the size fails with ENOSPC.
	chunk := make([]byte, 1<<20)
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err = f.Write(chunk); err != nil {
			break
		}
		if i > 32 {
			t.Fatal("wrote 32 MiB to a 16 MiB volume")
		}
	}
	_ = f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling the volume: %v, want ENOSPC", err)
	}

	if err := removeFilesystem(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(imagePath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the image is still there: %v", err)
	}
	if mounted, _ := isMountPoint(dir); mounted {
		t.Fatalf("%s is still mounted", dir)
	}
	// A directory without an image has nothing to remove.
	if err := removeFilesystem(dir); err != nil {
		t.Fatal(err)
	}
}
