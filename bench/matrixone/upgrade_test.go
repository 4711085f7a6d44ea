//go:build bench

package matrixone

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// upgradeShape is BenchmarkUpgrade's clusters but their image: three log
// stores, so that each restart keeps the log shard's majority, and two
// CNs, so that a drained CN's sessions have somewhere to go.
var upgradeShape = shape{logStores: 3, cns: 2}

// BenchmarkUpgrade upgrades a cluster from the image BENCH_MO_UPGRADE_FROM
// names to mov1.DefaultImage under a writer, by hand and with Steward;
// see the package documentation.
func BenchmarkUpgrade(b *testing.B) {
	from := os.Getenv("BENCH_MO_UPGRADE_FROM")
	if from == "" {
		b.Skip("BENCH_MO_UPGRADE_FROM names no image to upgrade from: make bench-matrixone-upgrade builds and loads one and sets it")
	}
	to := mov1.DefaultImage
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	k := connect(b)
	ns := k.Namespace(b, "bench-mo-upgrade", &mov1.MatrixOneCluster{})
	k.clientPod(b, ns)
	var hand, steward upgradeRun
	for b.Loop() {
		at := upgradeShape
		at.image = from
		k.byHandAt(b, ns, "hand", at)
		hand = k.underWrites(b, root, ns, "hand", func() { k.upgradeByHand(b, ns, "hand", from, to) })
		k.deleteByHand(b, ns, "hand")

		k.withStewardAt(b, ns, "mo", at)
		steward = k.underWrites(b, root, ns, "mo", func() { k.upgradeWithSteward(b, ns, "mo", to) })
		k.deleteCluster(b, ns, "mo")
	}
	b.Logf("%s to %s, by hand: %s", from, to, hand)
	b.Logf("%s to %s, with Steward: %s", from, to, steward)
	b.ReportMetric(hand.took.Seconds(), "s-upgrade-by-hand")
	b.ReportMetric(steward.took.Seconds(), "s-upgrade-steward")
	b.ReportMetric(steward.took.Seconds()/hand.took.Seconds(), "ratio-upgrade-to-by-hand")
	b.ReportMetric(hand.longestPause.Seconds(), "s-longest-write-pause-by-hand")
	b.ReportMetric(steward.longestPause.Seconds(), "s-longest-write-pause-steward")
	b.ReportMetric(steward.longestPause.Seconds()/hand.longestPause.Seconds(), "ratio-pause-to-by-hand")
	b.ReportMetric(float64(hand.failed), "failed-writes-by-hand")
	b.ReportMetric(float64(steward.failed), "failed-writes-steward")
}

// upgradeRun is what underWrites measured of one upgrade.
type upgradeRun struct {
	took, longestPause time.Duration
	// pausedAt is when the longest pause began, from the change.
	pausedAt      time.Duration
	acked, failed int
	// pauses are the pauses of a second or more, from the change; created
	// says when each role's pods were created, from the change.
	pauses  []string
	created string
}

func (r upgradeRun) String() string {
	return fmt.Sprintf("took %s; %d writes acknowledged, %d failed; the longest pause %s, %s after the change; %d pauses of a second or more (%s); pods created %s",
		r.took.Round(100*time.Millisecond), r.acked, r.failed, r.longestPause.Round(100*time.Millisecond),
		r.pausedAt.Round(time.Second), len(r.pauses), strings.Join(r.pauses, ", "), r.created)
}

// underWrites starts the writer pod of cluster name (smoke sql-write: a
// row every 100 ms, each on a new connection through the proxy), runs
// upgrade once it has an acknowledged write, waits for three more after
// it, stops the writer, checks that every acknowledged row is there, and
// measures the upgrade and the pauses between acknowledgements meanwhile.
func (k *kube) underWrites(b *testing.B, root, ns, name string, upgrade func()) upgradeRun {
	b.Helper()
	writer := name + "-writer"
	k.create(b, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: writer}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers: []corev1.Container{{Name: "writer", Image: probeImage, ImagePullPolicy: corev1.PullNever,
			Args: []string{"sql-write", "--interval", "100ms", "--table", "bench.t",
				"--server", fmt.Sprintf("%s-proxy.%s.svc:%d", name, ns, build.SQLPort), "--user", "root", "--password", "$(PASSWORD)"},
			Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: name + "-log-root"}, Key: build.PasswordKey}}}}}},
	}})
	k.waitAcks(b, ns, writer, 1, 5*time.Minute)
	start := time.Now()
	upgrade()
	took := time.Since(start)
	after := len(k.writerAcks(b, ns, writer))
	k.waitAcks(b, ns, writer, after+3, 3*time.Minute)
	if err := k.CS.CoreV1().Pods(ns).Delete(b.Context(), writer, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	logs := k.writerLog(b, ns, writer)
	for k.podExists(b, ns, writer) {
		if now := k.writerLog(b, ns, writer); len(now) > len(logs) {
			logs = now // up to its STOP
		}
		time.Sleep(time.Second)
	}
	acks, failed := parseWriterLog(logs)
	if len(acks) == 0 {
		b.Fatalf("the writer %s acknowledged nothing: %s", writer, logs)
	}
	run := upgradeRun{took: took, acked: len(acks), failed: failed, created: k.podsCreated(b, ns, name, start)}
	for i := 1; i < len(acks); i++ {
		if acks[i].at.Before(start) {
			continue
		}
		gap := acks[i].at.Sub(acks[i-1].at)
		if gap >= time.Second {
			run.pauses = append(run.pauses, fmt.Sprintf("%s at +%s", gap.Round(100*time.Millisecond), acks[i-1].at.Sub(start).Round(time.Second)))
		}
		if gap > run.longestPause {
			run.longestPause, run.pausedAt = gap, acks[i-1].at.Sub(start)
		}
	}
	last := acks[len(acks)-1].id
	out := k.sqlAs(b, root, ns, name, name+"-log-root", fmt.Sprintf("select count(*) from bench.t where id <= %d", last))
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n != last {
		b.Fatalf("%s: %s of the %d acknowledged rows are there", name, strings.TrimSpace(out), last)
	}
	return run
}

type ack struct {
	id int
	at time.Time
}

// parseWriterLog reads smoke sql-write's acknowledgements and counts its
// failures.
func parseWriterLog(log string) (acks []ack, failed int) {
	s := bufio.NewScanner(strings.NewReader(log))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		switch {
		case len(fields) == 3 && fields[0] == "ACK":
			id, err1 := strconv.Atoi(fields[1])
			at, err2 := time.Parse(time.RFC3339Nano, fields[2])
			if err1 == nil && err2 == nil {
				acks = append(acks, ack{id, at})
			}
		case len(fields) > 0 && fields[0] == "ERR":
			failed++
		}
	}
	return acks, failed
}

// writerLog is the writer's log so far; "" before its container runs.
func (k *kube) writerLog(b *testing.B, ns, pod string) string {
	raw, _ := k.CS.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(b.Context())
	return string(raw)
}

func (k *kube) writerAcks(b *testing.B, ns, pod string) []ack {
	acks, _ := parseWriterLog(k.writerLog(b, ns, pod))
	return acks
}

func (k *kube) waitAcks(b *testing.B, ns, pod string, n int, timeout time.Duration) {
	b.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if len(k.writerAcks(b, ns, pod)) >= n {
			return
		}
	}
	b.Fatalf("the writer %s has not %d writes acknowledged after %s", pod, n, timeout)
}

func (k *kube) podExists(b *testing.B, ns, name string) bool {
	_, err := k.CS.CoreV1().Pods(ns).Get(b.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	return err == nil
}

// roleOf is the role (log, tn, cn, proxy) of cluster name's pod, "" for
// another pod (its writer's, its probe's, another cluster's).
func roleOf(name, pod string) string {
	rest, ok := strings.CutPrefix(pod, name+"-")
	role, _, _ := strings.Cut(rest, "-")
	if !ok || !slices.Contains([]string{"log", "tn", "cn", "proxy"}, role) {
		return ""
	}
	return role
}

// podsCreated says when the pods of each of cluster name's roles were
// created, from start: "log +0s..+26s, cn ...".
func (k *kube) podsCreated(b *testing.B, ns, name string, start time.Time) string {
	pods, err := k.CS.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var parts []string
	for _, role := range []string{"log", "cn", "tn", "proxy"} {
		var first, last time.Duration = -1, -1
		for _, p := range pods.Items {
			if roleOf(name, p.Name) != role {
				continue
			}
			at := p.CreationTimestamp.Sub(start).Round(time.Second)
			if first < 0 || at < first {
				first = at
			}
			last = max(last, at)
		}
		parts = append(parts, fmt.Sprintf("%s +%s..+%s", role, first, last))
	}
	return strings.Join(parts, ", ")
}

// upgradeByHand changes the image of each StatefulSet byHandAt made, in
// the order log store, CNs, TN, proxy, and restarts its pods one at a
// time (their update strategy is OnDelete, as Steward's), each once the
// one before runs the new revision and is ready: what a user would do
// without the operator. No CN is drained.
func (k *kube) upgradeByHand(b *testing.B, ns, name, from, to string) {
	b.Helper()
	for _, role := range []string{"log", "cn", "tn", "proxy"} {
		sts := &appsv1.StatefulSet{}
		if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name + "-" + role}, sts); err != nil {
			b.Fatal(err)
		}
		for _, cs := range [][]corev1.Container{sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers} {
			for i := range cs {
				if cs[i].Image == from {
					cs[i].Image = to
				}
			}
		}
		if err := k.C.Update(b.Context(), sts); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if err := k.C.Get(b.Context(), client.ObjectKeyFromObject(sts), sts); err != nil {
				b.Fatal(err)
			}
			if sts.Status.ObservedGeneration >= sts.Generation {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: its new revision not computed after a minute", sts.Name)
			}
		}
		for i := *sts.Spec.Replicas - 1; i >= 0; i-- {
			pod := fmt.Sprintf("%s-%d", sts.Name, i)
			if err := k.CS.CoreV1().Pods(ns).Delete(b.Context(), pod, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			k.waitPodOn(b, ns, pod, sts.Status.UpdateRevision)
		}
	}
}

// waitPodOn waits until the pod name exists at revision (any, when "")
// and is ready.
func (k *kube) waitPodOn(b *testing.B, ns, name, revision string) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		p, err := k.CS.CoreV1().Pods(ns).Get(b.Context(), name, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp == nil && benchkube.PodReady(p) &&
			(revision == "" || p.Labels[appsv1.ControllerRevisionHashLabelKey] == revision) {
			return
		}
	}
	b.Fatalf("%s not ready at revision %q", name, revision)
}

// upgradeWithSteward sets the MatrixOneCluster's image and waits until
// every pod of its sets runs it and the cluster is Ready.
func (k *kube) upgradeWithSteward(b *testing.B, ns, name, to string) {
	b.Helper()
	mc := &mov1.MatrixOneCluster{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, mc); err != nil {
		b.Fatal(err)
	}
	mc.Spec.Image = to
	if err := k.C.Update(b.Context(), mc); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := k.C.Get(b.Context(), client.ObjectKeyFromObject(mc), mc); err != nil {
			b.Fatal(err)
		}
		if ok, _ := framework.IsReady(mc); ok && k.allPodsOn(b, ns, name, to) {
			return
		}
	}
	b.Fatalf("%s not upgraded after 20 minutes: %+v", name, mc.Status.Conditions)
}

// allPodsOn reports whether every pod of cluster name's four roles runs
// image.
func (k *kube) allPodsOn(b *testing.B, ns, name, image string) bool {
	pods, err := k.CS.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if roleOf(name, p.Name) == "" {
			continue
		}
		n++
		for _, c := range p.Spec.Containers {
			if c.Name == "mo" && c.Image != image {
				return false
			}
		}
	}
	return n == int(2+upgradeShape.logStores+upgradeShape.cns)
}
