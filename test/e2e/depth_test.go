//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stewardhq/steward/internal/kubectlsteward"
)

// depth is how deep the suite goes (E2E_DEPTH, make e2e E2E_DEPTH=smoke).
type depth string

const (
	// depthSmoke runs the operator's install check and each selected
	// system's smoke spec only: minutes for one system.
	depthSmoke depth = "smoke"
	// depthFull runs every test, the smoke specs included: what make test
	// and CI run.
	depthFull depth = "full"
)

// selectDepth resolves E2E_DEPTH; empty is full.
func selectDepth() error {
	switch d := depth(strings.TrimSpace(os.Getenv("E2E_DEPTH"))); d {
	case "", depthFull:
		env.depth = depthFull
	case depthSmoke:
		env.depth = depthSmoke
	default:
		return fmt.Errorf("E2E_DEPTH=%q: want %s or %s", d, depthSmoke, depthFull)
	}
	fmt.Printf("Depth: %s (E2E_DEPTH=%q)\n", env.depth, os.Getenv("E2E_DEPTH"))
	return nil
}

// skipUnlessFull skips a test that is not part of the smoke depth.
func skipUnlessFull(t *testing.T) {
	t.Helper()
	if env.depth != depthFull {
		t.Skipf("runs at E2E_DEPTH=%s only (E2E_DEPTH=%s)", depthFull, env.depth)
	}
}

// smokeSpec is a system's smoke: the least that shows Steward runs the
// system. A cluster is created from manifest and becomes Ready, serves one
// request of a client, and is deleted, after which none of its pods is
// left. It runs at both depths, first among the system's specs.
type smokeSpec struct {
	// resource is kubectl's name of the cluster's kind (zookeepercluster).
	resource string
	// name is the cluster's name in manifest.
	name string
	// ready bounds the wait from creation to Ready.
	ready time.Duration
	// manifest is the cluster in namespace ns, on the system's images.
	manifest func(t *testing.T, in specInput, ns string) string
	// request sends one request to the cluster (from the pod "client",
	// running the smoke image, or from the cluster's pods) and returns an
	// error unless the cluster answered it. It is retried for a minute.
	request func(ns string) error
}

// run runs the smoke as steps that stop at the first failure.
func (s smokeSpec) run(t *testing.T, in specInput) {
	installOperator(t)
	sc := &scenario{t: t, ns: newNamespace(t, in.System+"-smoke"), resource: s.resource, name: s.name}
	start := time.Now()
	sc.runSteps(t, sc.dumpState, []step{
		{"create and become Ready", func(t *testing.T) {
			if out, err := kubectlStdin(s.manifest(t, in, sc.ns), "apply", "-f", "-"); err != nil {
				fatalf(t, "%v: %s", err, out)
			}
			startClient(t, sc.ns)
			if out, err := kubectl("wait", "-n", sc.ns, s.resource+"/"+s.name, "--for=condition=Ready",
				fmt.Sprintf("--timeout=%ds", int(s.ready.Seconds()))); err != nil {
				fatalf(t, "%v: %s", err, out)
			}
			t.Logf("Ready after %s", time.Since(start).Round(time.Second))
		}},
		{"serve a request", func(t *testing.T) {
			eventually(t, time.Minute, "the cluster answers a request", func(context.Context) error { return s.request(sc.ns) })
		}},
		{"kubectl steward shows it Ready, pauses and resumes it", func(t *testing.T) {
			stewardPlugin(t, sc.ns, s.resource+"/"+s.name)
		}},
		{"delete", func(t *testing.T) {
			if out, err := kubectl("delete", "-n", sc.ns, s.resource, s.name, "--timeout=3m"); err != nil {
				fatalf(t, "%v: %s", err, out)
			}
			eventually(t, 2*time.Minute, "every pod of the cluster gone", func(ctx context.Context) error {
				pods, err := env.client.CoreV1().Pods(sc.ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				var left []string
				for _, p := range pods.Items {
					if p.Name != "client" {
						left = append(left, p.Name)
					}
				}
				if len(left) > 0 {
					return fmt.Errorf("left: %v", left)
				}
				return nil
			})
			t.Logf("created, served and deleted in %s", time.Since(start).Round(time.Second))
		}},
	})
}

// execIn runs command in the container of pod ns/pod and returns its
// output, or an error with it.
func execIn(ns, pod string, command ...string) (string, error) {
	out, err := kubectl(append([]string{"exec", "-n", ns, pod, "--"}, command...)...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
	}
	return out, nil
}

// waitNamespaceGone waits until namespace ns (being deleted) is gone, so
// that its pods' memory is free for the next test; it only logs when ns
// outlasts the wait.
func waitNamespaceGone(t *testing.T, ns string) {
	t.Helper()
	if ns == "" {
		return
	}
	err := waitFor(5*time.Minute, func(ctx context.Context) error {
		_, err := env.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		return fmt.Errorf("namespace %s still there", ns)
	})
	if err != nil {
		t.Logf("not waiting longer: %v", err)
	}
}

// kubectlSteward runs "kubectl steward args..." in process, with the
// suite's kubeconfig, in namespace ns, and returns what it printed; it
// fails the test on an error.
func kubectlSteward(t *testing.T, ns string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := kubectlsteward.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"-n", ns, "--cache-dir", t.TempDir(), "--wait", "1m"}, args...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fatalf(t, "kubectl steward %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// stewardPlugin runs "kubectl steward" (in process, with the suite's
// kubeconfig) on a Ready cluster, ref its TYPE/NAME: the list and the
// object's own status say Ready True, the list what runs; pause is confirmed by the
// controller (Paused=True), and so is resume.
func stewardPlugin(t *testing.T, ns, ref string) {
	t.Helper()
	run := func(args ...string) string { t.Helper(); return kubectlSteward(t, ns, args...) }
	// NAME SYSTEM READY REASON RUNS: what runs, from the kind's printer
	// columns, says something of a Ready cluster.
	if out := run("status"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ref) + `\s+\S+\s+True\s+\S+\s+[A-Za-z-]+=\S`).MatchString(out) {
		errorf(t, "kubectl steward status does not list %s Ready, with what runs:\n%s", ref, out)
	}
	if out := run("status", ref); !strings.Contains(out, "Ready:") || !regexp.MustCompile(`(?m)^Ready:\s+True`).MatchString(out) {
		errorf(t, "kubectl steward status %s does not say Ready True:\n%s", ref, out)
	}
	if out := run("pause", ref); !strings.Contains(out, ref+" paused (Paused=True") {
		errorf(t, "kubectl steward pause %s: %s", ref, out)
	}
	if out := run("resume", ref); !strings.Contains(out, ref+" resumed (Paused=False") {
		errorf(t, "kubectl steward resume %s: %s", ref, out)
	}
	if out := run("logs", "--operator-namespace", operatorNamespace, "--tail", "5"); !strings.Contains(out, "The leader is "+operatorNamespace+"/") ||
		len(strings.Split(strings.TrimSpace(out), "\n")) < 2 {
		errorf(t, "kubectl steward logs: %s", out)
	}
	t.Logf("kubectl steward status %s: Ready; pause and resume confirmed by the controller; logs of the leader", ref)
}
