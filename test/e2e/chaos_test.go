//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/test/chaos"
)

// The chaos suite (make chaos, docs/testing.md): each selected system's
// chaos spec attacks one cluster with a seeded, bounded run of random
// operations and faults (test/chaos) while a client writes to it, and
// checks after every step what users rely on. It runs only when
// E2E_CHAOS is set: make e2e and make test leave it out.
const (
	// chaosDefaultSteps is how many steps a system's run takes by default.
	chaosDefaultSteps = 50
	// chaosSettledFor is how long a system must look settled, without a
	// break, to be settled: a fault's effect reaches the pods and the
	// status some seconds after it (a killed pod's replacement, a server
	// that dropped out while cut off), and a status read at once still
	// shows the time before.
	chaosSettledFor = 20 * time.Second
)

// holdsFor waits up to timeout until check has passed without a failure
// for hold; the error is check's last answer.
func holdsFor(timeout, hold time.Duration, check func(ctx context.Context) error) error {
	var since time.Time
	return waitFor(timeout, func(ctx context.Context) error {
		if err := check(ctx); err != nil {
			since = time.Time{}
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if held := time.Since(since); held < hold {
			return fmt.Errorf("settled for %s of %s", held.Round(time.Second), hold)
		}
		return nil
	})
}

// podsReady says why ns has not exactly n pods matching selector, each
// Ready and none being deleted.
func podsReady(ctx context.Context, ns, selector string, n int) error {
	list, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	var notReady []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || !podReady(&p) {
			notReady = append(notReady, p.Name)
		}
	}
	if len(list.Items) != n || len(notReady) > 0 {
		return fmt.Errorf("%d pods, want %d, not ready: %v", len(list.Items), n, notReady)
	}
	return nil
}

// chaosConfig is what TestChaos gives a system's chaos spec.
type chaosConfig struct {
	seed   uint64
	steps  int
	budget time.Duration
}

// run runs the spec's actions, with settle and check, as one seeded run,
// and fails the test with the violation, after dump, when one is found.
// check runs while quiet's objects are watched for a write.
func (c chaosConfig) run(t *testing.T, actions []chaos.Action, settle, check func(context.Context) error, quiet quietSpec, dump func()) {
	t.Helper()
	held := func(ctx context.Context) error { return (&quiet).heldQuiet(ctx, check) }
	rep, err := chaos.Run{Seed: c.seed, Steps: c.steps, Budget: c.budget, Actions: actions, Settle: settle, Check: held, Logf: t.Logf}.Do(t.Context())
	counts := map[string]int{}
	for _, s := range rep.Steps {
		counts[s.Action]++
	}
	t.Logf("Chaos run of seed %d: %d steps in %s (%v), out of time: %t", c.seed, len(rep.Steps), rep.Took.Round(time.Second), counts, rep.OutOfTime)
	if err != nil {
		dump()
		var v *chaos.Violation
		if errors.As(err, &v) {
			fatalf(t, "invariant violated: %v (replay: make chaos SYSTEMS=%s E2E_CHAOS_SEED=%d)", err, systemOfTest(t), c.seed)
		}
		fatalf(t, "the chaos run stopped: %v", err)
	}
}

// systemOfTest is the system of a TestChaos/<system> test.
func systemOfTest(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	if len(parts) > 1 {
		return parts[1]
	}
	return ""
}

// TestChaos runs every selected system's chaos spec, from E2E_CHAOS_SEED
// (default: the clock's nanoseconds, printed), E2E_CHAOS_STEPS steps each
// (default 50), each system's run bounded by E2E_CHAOS_BUDGET (default
// 75m), one after the other or, with E2E_CHAOS_PARALLEL set, all at once:
// then each system's operator and API server faults strike the others'
// flows too, and a seed replays each system's steps but not how they
// interleave. A system without a chaos spec (systemSpec.chaos) skips,
// saying so.
func TestChaos(t *testing.T) {
	if os.Getenv("E2E_CHAOS") == "" {
		t.Skip("the chaos suite runs with make chaos (E2E_CHAOS=1)")
	}
	cfg := chaosConfig{seed: uint64(time.Now().UnixNano()), steps: chaosDefaultSteps, budget: 75 * time.Minute}
	var err error
	if s := os.Getenv("E2E_CHAOS_SEED"); s != "" {
		if cfg.seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			fatalf(t, "E2E_CHAOS_SEED=%q: %v", s, err)
		}
	}
	if s := os.Getenv("E2E_CHAOS_STEPS"); s != "" {
		if cfg.steps, err = strconv.Atoi(s); err != nil || cfg.steps < 1 {
			fatalf(t, "E2E_CHAOS_STEPS=%q: a count above 0, please (%v)", s, err)
		}
	}
	if s := os.Getenv("E2E_CHAOS_BUDGET"); s != "" {
		if cfg.budget, err = time.ParseDuration(s); err != nil {
			fatalf(t, "E2E_CHAOS_BUDGET=%q: %v", s, err)
		}
	}
	parallel := os.Getenv("E2E_CHAOS_PARALLEL") != ""
	t.Logf("Chaos seed %d (E2E_CHAOS_SEED replays it), %d steps per system, %s each at most, systems at once: %t", cfg.seed, cfg.steps, cfg.budget, parallel)
	for _, name := range slices.Sorted(maps.Keys(systemSpecs)) {
		t.Run(name, func(t *testing.T) {
			in, ok := systemInput(name)
			switch {
			case !ok:
				t.Skipf("%s is not selected by E2E_SYSTEMS=%q", name, os.Getenv("E2E_SYSTEMS"))
			case systemSpecs[name].chaos == nil:
				t.Skipf("%s has no chaos spec (systemSpec.chaos)", name)
			}
			if parallel {
				t.Parallel()
			}
			installOperator(t)
			systemSpecs[name].chaos(t, in, cfg)
		})
	}
}

// chaosPatch merge-patches the cluster, as a user would, retrying while
// the API server does not answer (a fault may have restarted it).
func (s *scenario) chaosPatch(patch string) error {
	return waitFor(time.Minute, func(context.Context) error {
		if out, err := kubectl("patch", s.resource, s.name, "-n", s.ns, "--type", "merge", "-p", patch); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
}

// dumpOperatorLogs logs the operator's replicas' whole recent logs, the
// current and the one before a restart, for a chaos run's dump.
func (s *scenario) dumpOperatorLogs() {
	pods, err := operatorPods(context.Background())
	if err != nil {
		s.t.Logf("operator pods: %v", err)
		return
	}
	for _, p := range pods {
		for _, args := range [][]string{{"logs", "-n", operatorNamespace, p.Name, "--tail=300"}, {"logs", "-n", operatorNamespace, p.Name, "--previous", "--tail=100"}} {
			out, _ := kubectl(args...)
			s.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// midFlow is what an operation calls once it has asked for a change that
// starts a flow: half the time it lands one of faults 0–10 s into it.
func midFlow(faults []chaos.Action) func(ctx context.Context, r *rand.Rand, did string) (string, error) {
	return func(ctx context.Context, r *rand.Rand, did string) (string, error) {
		if r.IntN(2) == 0 {
			return did, nil
		}
		sleep(ctx, chaos.Between(r, 0, 10*time.Second))
		f := chaos.OneOf(r, slices.DeleteFunc(slices.Clone(faults), func(a chaos.Action) bool { return a.Enabled != nil && !a.Enabled() })...)
		fdid, err := f.Run(ctx, r)
		return did + ", then " + f.Name + ": " + fdid, err
	}
}

// operatorFaults attack Steward's own replicas: the leader deleted at
// once (weight 2) or gracefully, the standby killed.
func operatorFaults(t *testing.T) []chaos.Action {
	return []chaos.Action{
		{Name: "kill-operator-leader", Weight: 2, Run: func(context.Context, *rand.Rand) (string, error) { return faultKillOperatorLeader(t, true) }},
		{Name: "delete-operator-leader", Weight: 1, Run: func(context.Context, *rand.Rand) (string, error) { return faultKillOperatorLeader(t, false) }},
		{Name: "kill-operator-standby", Weight: 1, Run: func(context.Context, *rand.Rand) (string, error) { return faultKillOperatorStandby(t) }},
	}
}

// restartAPIServerFault restarts localkube's kube-apiserver, one restart
// at a time when systems run at once.
var restartAPIServerFault = chaos.Action{Name: "restart-apiserver", Weight: 1, Run: func(context.Context, *rand.Rand) (string, error) {
	apiServerRestarts.Lock()
	defer apiServerRestarts.Unlock()
	return faultRestartAPIServer()
}}

var apiServerRestarts sync.Mutex

// podFaults attack the pods of one component of a system: one of names
// force-deleted (weight 2), two of them (when there are two), one running
// pod frozen or cut off for 5–25 s. names are the pods the model says
// exist, so that which is killed replays from the seed.
func podFaults(ns, component string, names func() []string) []chaos.Action {
	running := func(ctx context.Context, r *rand.Rand) (corev1.Pod, error) {
		pods, err := runningPods(ctx, ns, "app.kubernetes.io/component="+component)
		if err != nil {
			return corev1.Pod{}, err
		}
		return pickPod(r, pods)
	}
	faults := []chaos.Action{
		{Name: "kill-" + component, Weight: 2, Run: func(_ context.Context, r *rand.Rand) (string, error) {
			return faultKillPods(ns, chaos.OneOf(r, names()...))
		}},
		{Name: "kill-" + plural(component), Weight: 1, Enabled: func() bool { return len(names()) > 1 }, Run: func(_ context.Context, r *rand.Rand) (string, error) {
			all := names()
			two := r.Perm(len(all))[:2]
			return faultKillPods(ns, all[two[0]], all[two[1]])
		}},
		{Name: "freeze-" + component, Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			pod, err := running(ctx, r)
			if err != nil {
				return "", err
			}
			return faultFreeze(ctx, pod, chaos.Between(r, 5*time.Second, 25*time.Second))
		}},
		{Name: "cut-" + component + "-network", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			pod, err := running(ctx, r)
			if err != nil {
				return "", err
			}
			return faultCutNetwork(ctx, pod, chaos.Between(r, 5*time.Second, 25*time.Second))
		}},
	}
	return faults
}

// plural is a component's name for more than one (proxy: proxies).
func plural(component string) string {
	if stem, ok := strings.CutSuffix(component, "y"); ok {
		return stem + "ies"
	}
	return component + "s"
}

// ordinals are the pods name-0 … name-(n-1).
func ordinals(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// The faults every system's spec draws from. Each acts on the real
// cluster at once and returns what it did; the spec's settle then waits
// for the system to heal.

// faultKillOperatorLeader deletes the leading operator replica, at once
// (as a lost node's pod is cleared) or gracefully (as a drain or rollout
// does), once two replicas run and one leads: the standby must take over.
func faultKillOperatorLeader(t *testing.T, force bool) (string, error) {
	_, leader := operatorLeader(t)
	args := []string{"delete", "pod", "-n", operatorNamespace, leader.Name, "--wait=false"}
	how := "gracefully"
	if force {
		args, how = append(args, "--grace-period=0", "--force"), "at once"
		operatorKilled = true
	}
	if out, err := kubectl(args...); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return "deleted the leader " + leader.Name + " " + how, nil
}

// faultKillOperatorStandby SIGKILLs the container of the replica that does
// not lead, once two replicas run and one leads: the leader must not
// notice, and the standby comes back.
func faultKillOperatorStandby(t *testing.T) (string, error) {
	_, leader := operatorLeader(t)
	pods, err := operatorPods(t.Context())
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		if p.Name != leader.Name && p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].ContainerID != "" {
			killContainer(t, p)
			return "killed the standby " + p.Name, nil
		}
	}
	return "", errors.New("no standby replica runs")
}

// faultKillPods force-deletes pods of ns, as their node's loss would; a
// pod a flow has not made yet, or removed, is passed over.
func faultKillPods(ns string, pods ...string) (string, error) {
	for _, p := range pods {
		noteSuiteDeletion(ns, p)
	}
	args := append([]string{"delete", "pod", "-n", ns, "--grace-period=0", "--force", "--wait=false", "--ignore-not-found"}, pods...)
	if out, err := kubectl(args...); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return "force-deleted " + strings.Join(pods, ", "), nil
}

// faultFreeze stops every process of the pod's first container (SIGSTOP),
// as a stalled disk or a long pause would, for d, then continues them.
func faultFreeze(ctx context.Context, pod corev1.Pod, d time.Duration) (string, error) {
	if err := signalPod(pod, "SIGSTOP"); err != nil {
		return "", err
	}
	sleep(ctx, d)
	if err := signalPod(pod, "SIGCONT"); err != nil {
		return "", err
	}
	return fmt.Sprintf("froze %s for %s", pod.Name, d.Round(time.Second)), nil
}

// faultCutNetwork drops every packet to and from the pod but its own
// loopback's, for d, inside the pod's network namespace (one of
// localkube's): its peers and clients see it gone while it runs on.
func faultCutNetwork(ctx context.Context, pod corev1.Pod, d time.Duration) (string, error) {
	pid, err := containerPID(pod)
	if err != nil {
		return "", err
	}
	rules := [][]string{{"INPUT", "!", "-i", "lo", "-j", "DROP"}, {"OUTPUT", "!", "-o", "lo", "-j", "DROP"}}
	iptables := func(op string, rule []string) error {
		args := append([]string{"-t", strconv.Itoa(pid), "-n", "iptables", "-w", op}, rule...)
		if out, err := command("nsenter", args...); err != nil {
			return fmt.Errorf("iptables %s %v in %s: %w: %s", op, rule, pod.Name, err, out)
		}
		return nil
	}
	for _, r := range rules {
		if err := iptables("-I", r); err != nil {
			return "", err
		}
	}
	sleep(ctx, d)
	netns := fmt.Sprintf("/proc/%d/ns/net", pid)
	for _, r := range rules {
		if err := iptables("-D", r); err != nil {
			if _, gone := os.Stat(netns); gone != nil {
				// A flow restarted or replaced the pod meanwhile: its
				// network namespace, and the rules in it, went with it.
				return fmt.Sprintf("cut %s's network until its process went, within %s", pod.Name, d.Round(time.Second)), nil
			}
			return "", err
		}
	}
	return fmt.Sprintf("cut %s's network for %s", pod.Name, d.Round(time.Second)), nil
}

// containerPID is the host PID of the pod's first container's process.
func containerPID(pod corev1.Pod) (int, error) {
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := ctr("tasks", "ls")
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no task of %s's container %s", pod.Name, id)
}

// faultRestartAPIServer restarts localkube's kube-apiserver: every watch
// breaks and every client reconnects.
func faultRestartAPIServer() (string, error) {
	start := time.Now()
	if out, err := localkube("restart", "kube-apiserver"); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return fmt.Sprintf("restarted kube-apiserver (serving again after %s)", time.Since(start).Round(time.Second)), nil
}

// runningPods are the pods of ns that selector matches that run a
// container (a fault needs a process to act on), by name. The list is
// retried for a minute: another system's fault may be restarting the API
// server (seed 20261203, MatrixOne step 15, systems at once).
func runningPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	var list *corev1.PodList
	if err := waitFor(time.Minute, func(context.Context) error {
		var err error
		list, err = env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err
	}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// pickPod is one of pods, drawn from r; an error when there is none.
func pickPod(r *rand.Rand, pods []corev1.Pod) (corev1.Pod, error) {
	if len(pods) == 0 {
		return corev1.Pod{}, errors.New("no running pod to act on")
	}
	return chaos.OneOf(r, pods...), nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
