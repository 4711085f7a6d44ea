//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stewardhq/steward/test/smokeimage"
)

// env is what every test of the suite shares.
var env struct {
	root      string // repository root
	binDir    string // localkube's binaries
	client    kubernetes.Interface
	config    *rest.Config
	smokeTag  string
	imagesDir string            // where make images writes the image archives
	archives  map[string]string // the archives found there, by name without .tar
	systems   []string          // the systems under test (E2E_SYSTEMS), sorted
	depth     depth             // how deep the suite goes (E2E_DEPTH)
}

const smokeImage = "localhost/steward-smoke:e2e"

func TestMain(m *testing.M) {
	code := run(m)
	printFailureNotes(os.Stdout)
	os.Exit(code)
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		return fatal(err)
	}
	env.root = root
	env.binDir = getenv("LOCALKUBE_BIN_DIR", filepath.Join(root, ".cache", "localkube", "bin"))
	env.imagesDir = getenv("E2E_IMAGES_DIR", filepath.Join(root, "_output", "images"))
	if env.archives, err = findArchives(env.imagesDir); err != nil {
		return fatal(err)
	}
	// A bad E2E_SYSTEMS or E2E_DEPTH fails before the cluster comes up.
	if err := selectSystems(); err != nil {
		return fatal(err)
	}
	if err := selectDepth(); err != nil {
		return fatal(err)
	}
	reuse := os.Getenv("E2E_REUSE_CLUSTER") == "1"

	if !reuse {
		if out, err := localkube("up", "--simulated-nodes", "2"); err != nil {
			fmt.Fprintln(os.Stderr, out)
			_, _ = localkube("down")
			return fatal(fmt.Errorf("localkube up: %w", err))
		}
	}
	code := func() int {
		if err := setup(); err != nil {
			return fatal(err)
		}
		return m.Run()
	}()
	if reuse {
		return code
	}
	// Bringing the cluster down is part of the suite: it must leave
	// nothing behind.
	if out, err := localkube("down"); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: localkube down: %v\n%s\n", err, out)
		return 1
	}
	if out, err := localkube("leftovers"); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: localkube down left things behind:\n%s\n", out)
		return 1
	}
	fmt.Println("localkube down left no process, mount, network namespace or cgroup behind")
	return code
}

// setup connects to the cluster and builds and loads the smoke image.
func setup() error {
	kubeconfig := getenv("KUBECONFIG", "/var/lib/localkube/kubeconfig")
	os.Setenv("KUBECONFIG", kubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	env.config = cfg
	if env.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	return smokeimage.Build(env.root, env.binDir, smokeImage)
}

func localkube(args ...string) (string, error) {
	return command(filepath.Join(env.binDir, "localkube"), args...)
}

func kubectl(args ...string) (string, error) {
	return command(filepath.Join(env.binDir, "kubectl"), args...)
}

// kubectlStdin runs kubectl with stdin as its standard input.
func kubectlStdin(stdin string, args ...string) (string, error) {
	return commandStdin(stdin, filepath.Join(env.binDir, "kubectl"), args...)
}

func command(name string, args ...string) (string, error) {
	return commandStdin("", name, args...)
}

func commandStdin(stdin, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out.String(), err
}

// eventually calls check until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	var trail []string // each new reason the check gave, with when; the last 20 are printed
	last := ""
	err := waitFor(timeout, func(ctx context.Context) error {
		err := check(ctx)
		if err != nil && err.Error() != last {
			last = err.Error()
			trail = append(trail, fmt.Sprintf("  at %s: %s", time.Since(start).Round(time.Second), last))
		}
		return err
	})
	if err != nil {
		noteFailure(t, "%s: not done after %s: %v", what, timeout, err)
		t.Fatalf("%s: not done after %s: %v\nwhat the check said, as it changed:\n%s", what, timeout, err, strings.Join(trail[max(0, len(trail)-20):], "\n"))
	}
}

// waitFor calls check every second until it succeeds, and returns its last
// error if it did not within timeout.
func waitFor(timeout time.Duration, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func fatal(err error) int {
	fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
	return 1
}
