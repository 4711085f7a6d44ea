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
	"syscall"
	"time"
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

	// module is the Go module whose root holds images/versitygw.
	module = "github.com/stewardhq/steward"
	// gwModule and gwMain are versitygw's module and main package.
	gwModule = "github.com/versity/versitygw"
	gwMain   = gwModule + "/cmd/versitygw"
	// buildTimeout bounds the build: 85 s cold on two busy cores, more
	// when the modules must be downloaded first.
	buildTimeout = 15 * time.Minute
)

// environment is how servers run here, found once per process.
type environment struct {
	// bin is the versitygw binary.
	bin string
	// deferred names the lane the tests are deferred to, when the binary
	// is not cached and DeferEnv is set.
	deferred string
	// skip is why servers cannot run here; empty when they can.
	skip string
	// err is a failure of what should work (a BinEnv that is no binary).
	err error
}

var (
	envOnce sync.Once
	env     environment
)

// prepare finds (or builds) the binary once per process.
func prepare() environment {
	envOnce.Do(func() { env = findEnvironment() })
	return env
}

func findEnvironment() environment {
	if runtime.GOOS != "linux" {
		// The parent-death signal, which keeps a killed test from leaving
		// servers behind, is Linux's.
		return environment{skip: "real S3 servers need Linux"}
	}
	if bin := os.Getenv(BinEnv); bin != "" {
		if err := executable(bin); err != nil {
			return environment{err: fmt.Errorf("%s=%s: %w", BinEnv, bin, err)}
		}
		return environment{bin: bin}
	}
	repo, err := repoRoot()
	if err != nil {
		return environment{err: err}
	}
	gwDir := filepath.Join(repo, "images", "versitygw")
	version, err := pinnedVersion(filepath.Join(gwDir, "go.mod"))
	if err != nil {
		return environment{err: err}
	}
	bin := filepath.Join(cacheDir(), "versitygw-"+version)
	if executable(bin) == nil {
		return environment{bin: bin}
	}
	if lane := os.Getenv(DeferEnv); lane != "" {
		return environment{deferred: lane}
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return environment{skip: fmt.Sprintf("no versitygw in %s and no go command to build it (or set %s)", bin, BinEnv)}
	}
	if err := build(goCmd, gwDir, version, bin); err != nil {
		return environment{skip: fmt.Sprintf("building versitygw %s failed (no access to Go modules?): %v", version, err)}
	}
	return environment{bin: bin}
}

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

// repoRoot walks up from the working directory (a test's package directory)
// to the directory whose go.mod declares the Steward module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+module+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
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

// cacheDir is where built binaries are kept.
func cacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "steward", "s3test")
	}
	return filepath.Join(os.TempDir(), "steward-s3test")
}

// build builds versitygw's main from the module in gwDir into bin, unless
// another process did meanwhile. Concurrent processes (go test runs
// packages in parallel) serialize on a lock file; the binary appears under
// its final name only once complete.
func build(goCmd, gwDir, version, bin string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if executable(bin) == nil {
		return nil // built by another process while this one waited
	}
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
