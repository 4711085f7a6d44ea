package s3test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/stewardhq/steward/internal/testenv/realserver"
)

const (
	// BinEnv names a prebuilt versitygw binary to use instead of the
	// cached one.
	BinEnv = "S3TEST_BIN"
	// DeferEnv names the environment variable that defers building the
	// binary to another lane: with it, tests run only when it is cached
	// (or BinEnv names one) and skip otherwise, whatever CI says. make unit
	// sets it to the lane that builds it, make rootfs-tests.
	DeferEnv = "S3TEST_DEFER"

	// gwModule and gwMain are versitygw's module and main package.
	gwModule = "github.com/versity/versitygw"
	gwMain   = gwModule + "/cmd/versitygw"
	// buildTimeout bounds the build: 85 s cold on two busy cores, more
	// when the modules must be downloaded first.
	buildTimeout = 15 * time.Minute
)

// environment is how servers run here, found once per process.
type environment struct {
	// Status is whether servers can run here; err is a BinEnv that is no
	// binary.
	realserver.Status
	// bin is the versitygw binary.
	bin string
}

// prepare finds (or builds) the binary once per process.
var prepare = sync.OnceValue(findEnvironment)

func findEnvironment() environment {
	if runtime.GOOS != "linux" {
		// The parent-death signal, which keeps a killed test from leaving
		// servers behind, is Linux's.
		return skip("real S3 servers need Linux")
	}
	if bin := os.Getenv(BinEnv); bin != "" {
		if err := executable(bin); err != nil {
			return failed(fmt.Errorf("%s=%s: %w", BinEnv, bin, err))
		}
		return environment{bin: bin}
	}
	repo, err := realserver.RepoRoot()
	if err != nil {
		return failed(err)
	}
	gwDir := filepath.Join(repo, "images", "versitygw")
	version, err := pinnedVersion(filepath.Join(gwDir, "go.mod"))
	if err != nil {
		return failed(err)
	}
	bin := filepath.Join(realserver.CacheDir("s3test"), "versitygw-"+version)
	if executable(bin) == nil {
		return environment{bin: bin}
	}
	if lane := os.Getenv(DeferEnv); lane != "" {
		return environment{Status: realserver.Status{Deferred: deferred(lane)}}
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return skip(fmt.Sprintf("no versitygw in %s and no go command to build it (or set %s)", bin, BinEnv))
	}
	if err := build(goCmd, gwDir, version, bin); err != nil {
		return skip(fmt.Sprintf("building versitygw %s failed (no access to Go modules?): %v", version, err))
	}
	return environment{bin: bin}
}

// deferred says that the tests are deferred to lane.
func deferred(lane string) string {
	return fmt.Sprintf("no versitygw binary built yet; the tests that need one are deferred to %s (%s), which builds it", lane, DeferEnv)
}

func skip(why string) environment  { return environment{Status: realserver.Status{Skip: why}} }
func failed(err error) environment { return environment{Status: realserver.Status{Err: err}} }

// executable checks that path is an executable file.
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return errors.New("not an executable file")
	}
	return nil
}

// pinnedVersion returns the version of versitygw goMod requires.
func pinnedVersion(goMod string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("versitygw's version: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "require" && f[1] == gwModule {
			return f[2], nil
		}
		if len(f) >= 2 && f[0] == gwModule {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s requires no %s", goMod, gwModule)
}

// build builds versitygw's main from the module in gwDir into bin, unless
// another process did meanwhile. Concurrent processes (go test runs
// packages in parallel) serialize on a lock file; the binary appears under
// its final name only once complete.
func build(goCmd, gwDir, version, bin string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return realserver.Locked(bin+".lock", func() error {
		if executable(bin) == nil {
			return nil // built by another process while this one waited
		}
		return buildInto(goCmd, gwDir, version, bin)
	})
}

// buildInto builds the binary under a temporary name and renames it to bin
// once complete.
func buildInto(goCmd, gwDir, version, bin string) error {
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	defer os.Remove(tmp)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// Static, as images/versitygw/build.sh builds it; the version stamped
	// as there, or versitygw would call itself "git".
	cmd := exec.CommandContext(ctx, goCmd, "-C", gwDir, "build", "-trimpath", "-ldflags", "-X main.Version="+version, "-o", tmp, gwMain)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(string(out), 20))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "s3test: built versitygw %s into %s in %s\n", version, bin, time.Since(start).Round(time.Second))
	return nil
}

// tail returns the last n lines of s, indented.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
