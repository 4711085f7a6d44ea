//go:build bench

package zookeeper

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// baselineRounds is how many times BenchmarkCreateVsStatefulSet and
// BenchmarkHealVsStatefulSet create (or heal) each of the two.
const baselineRounds = 9

// BenchmarkCreateVsStatefulSet creates, baselineRounds times each and
// alternating which goes first, a 3-server Steward cluster and the same
// servers as a plain StatefulSet: the same image and heap, a static zoo.cfg,
// Parallel pods, a headless Service that publishes addresses before
// readiness, a volume each, and the same readiness probe (the server
// serves). It prints both creation times, apply → Ready for Steward and
// apply → three pods ready for the StatefulSet, and the ratios of their
// medians and worsts (issue 35's targets: 1.0 and 1.1).
func BenchmarkCreateVsStatefulSet(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-vs")
	load := benchkube.LoadFromEnv(b)
	for b.Loop() {
		var steward, plain []time.Duration
		for i := range baselineRounds {
			alternately(i, func() {
				name := fmt.Sprintf("zk-%d", i)
				steward = append(steward, k.timeStewardCreate(b, ns, name))
				k.delete(b, ns, name)
			}, func() {
				name := fmt.Sprintf("plain-%d", i)
				plain = append(plain, k.timePlainCreate(b, ns, name))
				k.deletePlain(b, ns, name)
			})
		}
		reportRatio(b, "create", load, steward, plain)
	}
}

// BenchmarkHealVsStatefulSet deletes 2 of the 3 pods of a running Steward
// cluster and of the plain StatefulSet (as above), baselineRounds times each,
// and prints the time until the replacements serve (Steward: also until
// Ready says so) and the ratios of medians and worsts.
func BenchmarkHealVsStatefulSet(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-heal")
	load := benchkube.LoadFromEnv(b)
	for b.Loop() {
		k.timeStewardCreate(b, ns, "zk")
		k.timePlainCreate(b, ns, "plain")
		var steward, plain []time.Duration
		for i := range baselineRounds {
			alternately(i, func() {
				steward = append(steward, k.timeHeal(b, ns, "zk", func() bool { return k.ready(b, ns, "zk") }))
			}, func() {
				plain = append(plain, k.timeHeal(b, ns, "plain", nil))
			})
		}
		reportRatio(b, "heal", load, steward, plain)
		k.delete(b, ns, "zk")
		k.deletePlain(b, ns, "plain")
	}
}

// alternately runs steward then plain in even rounds and the other way
// round in odd ones, so that neither always runs on a node the other just
// left busy.
func alternately(round int, steward, plain func()) {
	if round%2 == 0 {
		steward()
		plain()
	} else {
		plain()
		steward()
	}
}

func reportRatio(b *testing.B, what, load string, steward, plain []time.Duration) {
	sm, sw := medianAndWorst(steward)
	pm, pw := medianAndWorst(plain)
	b.Logf("%s, machine: %s, 1-minute load average %s at the end", what, load, benchkube.LoadAverage())
	b.Logf("%s, Steward:          %s", what, roundAll(steward))
	b.Logf("%s, plain StatefulSet: %s", what, roundAll(plain))
	b.Logf("%s: median %.1f s vs %.1f s (%.2f×), worst %.1f s vs %.1f s (%.2f×)", what,
		sm.Seconds(), pm.Seconds(), sm.Seconds()/pm.Seconds(), sw.Seconds(), pw.Seconds(), sw.Seconds()/pw.Seconds())
	b.ReportMetric(sm.Seconds(), "s-"+what+"-median")
	b.ReportMetric(pm.Seconds(), "s-"+what+"-median-plain")
	b.ReportMetric(sm.Seconds()/pm.Seconds(), what+"-median-ratio")
	b.ReportMetric(sw.Seconds()/pw.Seconds(), what+"-worst-ratio")
}

func medianAndWorst(ds []time.Duration) (median, worst time.Duration) {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2], s[len(s)-1]
}

func roundAll(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond).String()
	}
	return strings.Join(out, " ")
}

// timeStewardCreate creates a 3-server cluster and returns apply → Ready.
func (k *kube) timeStewardCreate(b *testing.B, ns, name string) time.Duration {
	start := time.Now()
	k.create(b, ns, name, 3)
	stsAt, podsAt, d := k.waitCreated(b, ns, name, start)
	b.Logf("%s: StatefulSet after %s, 3 pods ready after %s, Ready after %s; %s", name, stsAt.Round(10*time.Millisecond),
		podsAt.Round(10*time.Millisecond), d.Round(10*time.Millisecond), k.podTimeline(b, ns, name, start))
	return d
}

// timePlainCreate creates the plain StatefulSet and returns apply → three
// pods ready.
func (k *kube) timePlainCreate(b *testing.B, ns, name string) time.Duration {
	start := time.Now()
	for _, obj := range plainObjects(ns, name) {
		if err := k.C.Create(b.Context(), obj); err != nil {
			b.Fatal(err)
		}
	}
	d := k.waitFor(b, start, name, func() bool { return k.podsReady(b, ns, name) == 3 })
	b.Logf("%s: 3 pods ready after %s; %s", name, d.Round(10*time.Millisecond), k.podTimeline(b, ns, name, start))
	return d
}

// timeHeal deletes pods 0 and 1 of name and returns the time until three
// pods, both replacements among them, are ready, and then until done (if
// any) holds; it logs both.
func (k *kube) timeHeal(b *testing.B, ns, name string, done func() bool) time.Duration {
	old := map[types.UID]bool{}
	start := time.Now()
	for _, ordinal := range []int{0, 1} {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = ns, fmt.Sprintf("%s-%d", name, ordinal)
		if err := k.C.Get(b.Context(), types.NamespacedName{Namespace: ns, Name: pod.Name}, pod); err != nil {
			b.Fatal(err)
		}
		old[pod.UID] = true
		if err := k.C.Delete(b.Context(), pod); err != nil {
			b.Fatal(err)
		}
	}
	podsReady := k.waitFor(b, start, name, func() bool {
		pods := k.serverPods(b, ns, name)
		ready := 0
		for _, p := range pods {
			if old[p.UID] {
				return false
			}
			if benchkube.PodReady(&p) {
				ready++
			}
		}
		return ready == 3
	})
	if done == nil {
		b.Logf("%s: pods ready after %s; %s", name, podsReady.Round(10*time.Millisecond), k.podTimeline(b, ns, name, start))
		return podsReady
	}
	d := k.waitFor(b, start, name, done)
	b.Logf("%s: pods ready after %s, done after %s; %s", name, podsReady.Round(10*time.Millisecond), d.Round(10*time.Millisecond),
		k.podTimeline(b, ns, name, start))
	return d
}

// podTimeline says, for each server pod, when (after start) it was created,
// scheduled (its volume bound), its container started and it became ready
// (to the second: the API's timestamps have no finer grain), and, from the
// kubelet's timestamps on its log lines after start (to the millisecond),
// when zk-run started the JVM, the server bound its client port, started
// its AdminServer, ended its first election (its role, and how long the
// election ran) and served, how long zk-run waited for the DNS to answer
// its name and to have its peers', and which probes failed: so that a
// slow round shows where its time went. A heal's surviving pod shows only
// what came after start.
func (k *kube) podTimeline(b *testing.B, ns, name string, start time.Time) string {
	since := func(t metav1.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.0fs", t.Sub(start.Truncate(time.Second)).Seconds())
	}
	var out []string
	for _, p := range k.serverPods(b, ns, name) {
		var scheduled, started, ready metav1.Time
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil {
				started = c.State.Running.StartedAt
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = c.LastTransitionTime
			}
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduled = c.LastTransitionTime // after its volume was bound
			}
		}
		milestones := "no log"
		if log, err := k.CS.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Timestamps: true}).DoRaw(b.Context()); err == nil {
			milestones = logMilestones(string(log), start)
			keepLog(b, ns, p.Name, start, log)
		}
		out = append(out, fmt.Sprintf("%s created %s scheduled %s started %s ready %s (%s%s)",
			p.Name, since(p.CreationTimestamp), since(scheduled), since(started), since(ready), milestones, k.probeFailures(b, &p, start)))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// keepLog writes a server's log, as podTimeline read it, to
// $BENCH_ZK_LOGS/<namespace>/<pod>-<start>.log when BENCH_ZK_LOGS names a
// directory: a round's timeline says where its time went, the servers'
// own words say why.
func keepLog(b *testing.B, ns, pod string, start time.Time, log []byte) {
	dir := os.Getenv("BENCH_ZK_LOGS")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%s.log", pod, start.UTC().Format("150405.000")))
	if err := os.WriteFile(name, log, 0o644); err != nil {
		b.Fatal(err)
	}
}

// probeFailures says which of the pod's probes the kubelet reported
// failing (its Unhealthy Events: how many times, from when, the last
// output), "" when none did: a pod ready long after it served shows why.
func (k *kube) probeFailures(b *testing.B, pod *corev1.Pod, start time.Time) string {
	// By UID: a replacement pod has its predecessor's name.
	events, err := k.CS.CoreV1().Events(pod.Namespace).List(b.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(pod.UID) + ",reason=Unhealthy"})
	if err != nil {
		return ""
	}
	var out []string
	for _, e := range events.Items {
		first, last := e.FirstTimestamp.Time, e.LastTimestamp.Time
		if first.IsZero() {
			first, last = e.EventTime.Time, e.EventTime.Time
		}
		if last.Before(start.Truncate(time.Second)) {
			continue // a pod that survived a heal failed this before it
		}
		out = append(out, fmt.Sprintf("%dx from %.0fs: %.120q", max(e.Count, 1), first.Sub(start.Truncate(time.Second)).Seconds(), e.Message))
	}
	if len(out) == 0 {
		return ""
	}
	return ", probes failed " + strings.Join(out, "; ")
}

// The server's log lines podTimeline times: zk-run starting the JVM, the
// client port bound, the AdminServer started, the end of an election (the
// role the server took and how long the election ran), and serving.
var (
	jvmStarting  = regexp.MustCompile(`zk-run: starting ZooKeeper`)
	portBound    = regexp.MustCompile(`binding to port .*:2181`)
	adminStarted = regexp.MustCompile(`Started AdminServer`)
	electionTook = regexp.MustCompile(`(LEADING|FOLLOWING|OBSERVING) - LEADER ELECTION TOOK - ([0-9]+) (?i:ms)`)
	// serving: the leader has its quorum's acknowledgements, or a
	// learner is up to date with the leader: srvr reports a Mode from
	// then on.
	serving   = regexp.MustCompile(`Have quorum of supporters|Learner received UPTODATE message`)
	dnsWaited = regexp.MustCompile(`resolves to this pod's address after ([0-9.]+s)`)
	// peersWaited: zk-run waited for the DNS to have its peers' names,
	// found them all (after) or not (not in the DNS after).
	peersWaited = regexp.MustCompile(`every peer is in the DNS after ([0-9.]+s)|not in the DNS after ([0-9.]+s)`)
)

// logMilestones reads a server's log, each line prefixed by the kubelet's
// timestamp, and says when after start each milestone came.
func logMilestones(log string, start time.Time) string {
	at := map[*regexp.Regexp]string{}
	election, dns, peers := "no election", "no DNS wait", "no peer wait"
	for _, line := range strings.Split(log, "\n") {
		stamp, text, ok := strings.Cut(line, " ")
		t, err := time.Parse(time.RFC3339Nano, stamp)
		if !ok || err != nil || t.Before(start) {
			continue // lines before start: a survivor's earlier life
		}
		for _, re := range []*regexp.Regexp{jvmStarting, portBound, adminStarted, electionTook, serving} {
			if _, seen := at[re]; !seen && re.MatchString(text) {
				at[re] = fmt.Sprintf("%.1fs", t.Sub(start).Seconds())
			}
		}
		if m := electionTook.FindStringSubmatch(text); m != nil && election == "no election" {
			election = strings.ToLower(m[1]) + " after " + m[2] + " ms"
		}
		if m := dnsWaited.FindStringSubmatch(text); m != nil {
			dns = "DNS waited " + m[1]
		}
		if m := peersWaited.FindStringSubmatch(text); m != nil {
			peers = "peers waited " + m[1] + m[2]
			if m[2] != "" {
				peers += ", some not found"
			}
		}
	}
	get := func(re *regexp.Regexp) string {
		if v, ok := at[re]; ok {
			return v
		}
		return "-"
	}
	return fmt.Sprintf("jvm %s port %s admin %s elected %s serving %s, %s, %s, %s",
		get(jvmStarting), get(portBound), get(adminStarted), get(electionTook), get(serving), election, dns, peers)
}

// waitCreated waits until the 3-server cluster name, applied at start, is
// Ready and returns when its StatefulSet existed, its three pods were
// ready, and it was Ready.
func (k *kube) waitCreated(b *testing.B, ns, name string, start time.Time) (stsAt, podsAt, readyAt time.Duration) {
	readyAt = k.waitFor(b, start, name, func() bool {
		if stsAt == 0 && k.exists(ns, name, &appsv1.StatefulSet{}) {
			stsAt = time.Since(start)
		}
		if stsAt != 0 && podsAt == 0 && k.podsReady(b, ns, name) == 3 {
			podsAt = time.Since(start)
		}
		return podsAt != 0 && k.ready(b, ns, name)
	})
	return stsAt, podsAt, readyAt
}

func (k *kube) waitFor(b *testing.B, start time.Time, name string, cond func() bool) time.Duration {
	for !cond() {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%s: not done after 5 minutes", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

func (k *kube) serverPods(b *testing.B, ns, name string) []corev1.Pod {
	pods, err := k.CS.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + name + ",app.kubernetes.io/component=server"})
	if err != nil {
		return nil
	}
	return pods.Items
}

// deletePlain deletes the plain StatefulSet's objects and its volume claims
// and waits until its pods are gone.
func (k *kube) deletePlain(b *testing.B, ns, name string) {
	for _, obj := range plainObjects(ns, name) {
		if err := k.C.Delete(b.Context(), obj, &client.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
			b.Fatal(err)
		}
	}
	for len(k.serverPods(b, ns, name)) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	for i := range 3 {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("data-%s-%d", name, i)}}
		if err := client.IgnoreNotFound(k.C.Delete(b.Context(), claim)); err != nil {
			b.Fatal(err)
		}
	}
}

// plainObjects are a 3-server ensemble as one would write it by hand, with
// Steward's image (its zk-run copies /conf and derives myid from the pod's
// ordinal) and the heap of (*kube).create.
func plainObjects(ns, name string) []client.Object {
	labels := map[string]string{"app.kubernetes.io/instance": name, "app.kubernetes.io/component": "server"}
	headless := name + "-hs"
	var cfg strings.Builder
	cfg.WriteString("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/data\nclientPort=2181\n" +
		"quorumListenOnAllIPs=true\nadmin.enableServer=false\n4lw.commands.whitelist=" + build.FourLetterWords + "\n")
	for i := range 3 {
		fmt.Fprintf(&cfg, "server.%d=%s-%d.%s.%s.svc.cluster.local:2888:3888\n", i+1, name, i, headless, ns)
	}
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: labels} }
	probe := func(command []string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: command}},
			PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: failures}
	}
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta(name), Data: map[string]string{"zoo.cfg": cfg.String()}},
		&corev1.Service{ObjectMeta: meta(headless), Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "quorum", Port: 2888}, {Name: "election", Port: 3888}},
		}},
		&appsv1.StatefulSet{ObjectMeta: meta(name), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: headless, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To(build.UID), FSGroup: ptr.To(build.GID)},
				Containers: []corev1.Container{{
					Name: "zookeeper", Image: zkv1.DefaultImage, ImagePullPolicy: corev1.PullNever,
					Env:            []corev1.EnvVar{{Name: "ZK_HEAP", Value: "64m"}},
					VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/conf"}, {Name: "data", MountPath: "/data"}},
					StartupProbe:   probe(build.LivenessCommand, 5, 60),
					ReadinessProbe: probe(build.ReadinessCommand, 5, 2),
				}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
			}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		}},
	}
}
