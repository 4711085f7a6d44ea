// Package smokeimage builds the smoke image, the tests' client and server
// in pods: test/e2e/smoke's binary (HTTP, DNS, TCP, ZooKeeper, GPSS and
// MySQL-protocol clients) in an image mkimage makes, loaded into the local
// cluster. The end-to-end suite and the benchmarks use it.
package smokeimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds the smoke binary from the repository at root (static), puts
// it in an image tagged tag with localkube's mkimage from binDir, and loads
// the image into the local cluster with binDir's localkube.
func Build(root, binDir, tag string) error {
	tmp, err := os.MkdirTemp("", "steward-smoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "smoke")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./test/e2e/smoke")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build smoke: %w: %s", err, out)
	}
	archive := filepath.Join(tmp, "smoke.tar")
	mkimage := exec.Command(filepath.Join(binDir, "mkimage"), "--tag", tag,
		"--file", bin+":/smoke:0755", "--entrypoint", "/smoke", "--cmd", "serve",
		"--user", "65532:65532", "--output", archive)
	if out, err := mkimage.CombinedOutput(); err != nil {
		return fmt.Errorf("mkimage: %w: %s", err, out)
	}
	if out, err := exec.Command(filepath.Join(binDir, "localkube"), "load-image", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("load the smoke image: %w: %s", err, out)
	}
	return nil
}
