//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// moClusterSpec runs MatrixOne's sets together on real MatrixOne: a
// LogSet of one store, a TNSet, a CNSet of two and a ProxySet, created at
// once (each waits for what it needs), then SQL through the proxy's
// Service, with a client writing through it while the TN pod is killed,
// the log pod is killed, a CN pod is killed, the CNs' configuration is
// rolled (each CN drained first), the CNs are scaled 2 → 3 → 1 (sessions
// keep their variables through the drain), and the operator is killed in
// the middle of a drain; every acknowledged write is there after each.
// The log service, TN and CNs run MatrixOne's default observability, as a
// user's would: every node's system log writers hold SQL connections to
// a CN (user mo_logger), which no proxy moves, and each drain must still
// end by its session count, not at drainTimeout. About 2.6 GiB of memory
// limits (3.2 GiB with three CNs).
func moClusterSpec(t *testing.T, in specInput) {
	installOperator(t)
	// The scenario's object is the CNSet: patch scales it, and the dump
	// shows it whole.
	m := &moCluster{scenario: newScenario(t, "moc", "cnset", moClusterCN, "cn"), image: in.image(t, "matrixone")}
	m.runSteps(t, m.dumpState, []step{
		{"create the sets together", m.create},
		{"the TN pod killed under writes", m.killTN},
		{"the log pod killed under writes", m.killLog},
		{"a CN pod killed under writes", m.killCN},
		{"a CN configuration change rolled under writes", m.rollCNs},
		{"CNs scaled 2 to 3 to 1 under writes, sessions keeping their variables", m.scaleCNs},
		{"the operator killed in the middle of a CN drain", m.operatorKilledMidDrain},
		{"an account's sessions served by its own labeled CN group", m.accountGroup},
		{"proxies scaled 1 to 2 to 1 under writes", m.scaleProxies},
	})
}

type moCluster struct {
	scenario
	image string
	// next is the id of the next row the writer inserts.
	next int
	// rootPassword is root's, read once from the generated Secret.
	rootPassword string
	// acked are the writes the last underWrites had acknowledged, in
	// the order they were.
	acked []ackedWrite
	// logStorage is the log store's storage, the entries of a YAML flow
	// mapping; "": 256Mi of the default StorageClass.
	logStorage string
}

// ackedWrite is a row the writer inserted and MatrixOne acknowledged.
type ackedWrite struct {
	id int
	at time.Time
}

// The sets' names.
const (
	moClusterLog   = "mo-log"
	moClusterTN    = "mo-tn"
	moClusterCN    = "mo-cn"
	moClusterProxy = "mo-proxy"
)

// drainTimeout is the CNSet's spec.drainTimeout (the default).
const drainTimeout = 5 * time.Minute

// manifests are the four sets; cnLogLevel is the CNs' [log] level.
func (m *moCluster) manifests(cnLogLevel string) string {
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: LogSet
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: 1
  image: %[3]s
  imagePullPolicy: Never
  resources: {limits: {memory: 384Mi}}
  storage: {%[4]s}
  sharedStorage: {fileSystem: {claimName: mo-shared}}
---
`, moClusterLog, m.ns, m.image, cmp.Or(m.logStorage, "size: 256Mi")) + moSQLSets(m.ns, m.image, 2, cnLogLevel)
}

// moSQLSets are a TNSet, a CNSet of cns and a ProxySet on the LogSet
// mo-log (moClusterLog); cnLogLevel is the CNs' [log] level. Only the
// proxy, with the least memory, runs without MatrixOne's traces and
// metrics.
func moSQLSets(ns, image string, cns int, cnLogLevel string) string {
	quiet := `    [observability]
    disableTrace = true
    disableMetric = true
`
	common := fmt.Sprintf("  image: %s\n  imagePullPolicy: Never\n", image)
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: TNSet
metadata: {name: %[2]s, namespace: %[5]s}
spec:
  logSet: %[1]s
%[6]s  resources: {limits: {memory: 768Mi}}
  storage: {size: 512Mi}
---
apiVersion: matrixone.steward.dev/v1alpha1
kind: CNSet
metadata: {name: %[3]s, namespace: %[5]s}
spec:
  logSet: %[1]s
  replicas: %[9]d
%[6]s  resources: {limits: {memory: 640Mi}}
  storage: {size: 256Mi}
  config: |
    [log]
    level = %[8]q
---
apiVersion: matrixone.steward.dev/v1alpha1
kind: ProxySet
metadata: {name: %[4]s, namespace: %[5]s}
spec:
  logSet: %[1]s
%[6]s  resources: {limits: {memory: 192Mi}}
  config: |
%[7]s`, moClusterLog, moClusterTN, moClusterCN, moClusterProxy, ns, common, quiet, cnLogLevel, cns)
}

func (m *moCluster) create(t *testing.T) {
	createSharedClaim(t, m.ns)
	start := time.Now()
	if out, err := kubectlStdin(m.manifests("info"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	m.startClient()
	m.waitAllReady(6 * time.Minute)
	t.Logf("Every set Ready after %s", time.Since(start).Round(time.Second))
	cn := &mov1.CNSet{}
	m.get(moClusterCN, cn)
	for i, s := range cn.Status.Stores {
		if s.UUID != wire.StoreID(m.ns, fmt.Sprintf("%s-%d", moClusterCN, i)) || s.State != mov1.StoreUp || s.WorkState != wire.WorkStateWorking {
			errorf(t, "CN store %d: %+v", i, s)
		}
	}
	proxy := &mov1.ProxySet{}
	m.get(moClusterProxy, proxy)
	if proxy.Status.SQLAddress != fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, m.ns) {
		errorf(t, "the proxy's SQL address %q", proxy.Status.SQLAddress)
	}
	var out string
	eventually(t, 2*time.Minute, "SQL through the proxy", func(context.Context) error {
		var err error
		out, err = m.sql("select version()")
		return err
	})
	t.Logf("SQL through %s: %s", proxy.Status.SQLAddress, strings.TrimSpace(out))
	if _, err := m.sql("create database if not exists e2e"); err != nil {
		fatalNow(t, err)
	}
	if _, err := m.sql("create table if not exists e2e.t (id int primary key)"); err != nil {
		fatalNow(t, err)
	}
	m.readinessServes(t, moClusterProxy+"-0", moClusterCN+"-0")
	m.metricsServed(t)
}

// metricsServed reads each role's Prometheus metrics from its pod's
// metrics port, as a scraper would, checks that each serves the process'
// and the Go runtime's, and logs how many of MatrixOne's own it serves (a
// labeled metric shows once it has counted something).
func (m *moCluster) metricsServed(t *testing.T) {
	const metric = "process_resident_memory_bytes"
	for _, pod := range []string{moClusterLog + "-0", moClusterTN + "-0", moClusterCN + "-0", moClusterProxy + "-0"} {
		p, err := env.client.CoreV1().Pods(m.ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		url := fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, build.MetricsPort)
		var out string
		eventually(t, time.Minute, "the metrics of "+pod, func(context.Context) error {
			out, err = kubectl("exec", "-n", m.ns, "client", "--", "/smoke", "get", url)
			return err
		})
		names := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if name, _, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
				name, _, _ = strings.Cut(name, "{")
				names[name] = true
			}
		}
		if !names[metric] || !names["go_goroutines"] || !names["go_memstats_heap_inuse_bytes"] {
			errorf(t, "%s serves %d metrics at %s, not %s, go_goroutines and go_memstats_heap_inuse_bytes", pod, len(names), url, metric)
		}
		mo := slices.DeleteFunc(slices.Sorted(maps.Keys(names)), func(n string) bool { return !strings.HasPrefix(n, "mo_") })
		t.Logf("%s: %d metrics at %s, %d of MatrixOne's: %v", pod, len(names), url, len(mo), mo)
	}
}

// readinessServes runs each pod's readiness probe as the kubelet does
// (its exec command, in the mo container): it logs in as root with the
// password from the mounted Secret and runs select 1, not only completes
// a handshake that ends in a refused login.
func (m *moCluster) readinessServes(t *testing.T, pods ...string) {
	t.Helper()
	for _, name := range pods {
		pod, err := env.client.CoreV1().Pods(m.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		probe := pod.Spec.Containers[0].ReadinessProbe
		if probe == nil || probe.Exec == nil {
			errorf(t, "%s: readiness is not an exec probe: %+v", name, probe)
			continue
		}
		out, err := kubectl(append([]string{"exec", "-n", m.ns, name, "-c", "mo", "--"}, probe.Exec.Command...)...)
		if err != nil || !strings.HasPrefix(out, "served") {
			errorf(t, "%s: its readiness probe %q: %v: %s", name, probe.Exec.Command, err, out)
			continue
		}
		t.Logf("%s: its readiness probe: %s", name, strings.TrimSpace(out))
	}
}

// killTN deletes the TN's pod under writes: it comes back on its volume.
// It logs how long the TN's restart cost the clients: from the kill to the
// first write acknowledged after the outage, and to the first fresh
// connection through the proxy that completed its handshake and a
// statement after it (a second client opening one connection after
// another), with the TN pod's own timeline and what MatrixOne logged of
// it.
func (m *moCluster) killTN(t *testing.T) {
	stop := make(chan struct{})
	stopHandshakes := sync.OnceFunc(func() { close(stop) })
	defer stopHandshakes()
	handshakes := m.handshakes(stop)
	var kill time.Time
	acked := m.underWrites(t, func() {
		kill = time.Now()
		m.deletePod(moClusterTN + "-0")
		m.waitAllReady(4 * time.Minute)
	})
	stopHandshakes()
	shook := <-handshakes
	lastWrite, firstWrite := resumedAfter(acked, kill)
	lastShake, firstShake := resumedAfter(shook, kill)
	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(kill).Round(100 * time.Millisecond).String()
	}
	t.Logf("The TN's restart: writes acknowledged until %s after the kill and again from %s; "+
		"handshakes through the proxy completed until %s and again from %s (%d in all)",
		since(lastWrite), since(firstWrite), since(lastShake), since(firstShake), len(shook))
	if firstWrite.IsZero() {
		errorf(t, "no write acknowledged after the TN's kill")
	}
	m.logRestart(t, kill, since)
}

// handshakes opens connections through the proxy's Service one after
// another until stop is closed, each one new (a MySQL handshake as root,
// then select 1, within 2 s); it sends when each that succeeded ended.
func (m *moCluster) handshakes(stop <-chan struct{}) <-chan []time.Time {
	out := make(chan []time.Time, 1)
	server := fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, m.ns)
	password := m.password()
	go func() {
		var done []time.Time
		for {
			select {
			case <-stop:
				out <- done
				return
			default:
			}
			if _, err := kubectl("exec", "-n", m.ns, "client", "--", "/smoke", "sql", "--timeout", "2s",
				"--server", server, "--user", "root", "--password", password, "select 1"); err == nil {
				done = append(done, time.Now())
			} else {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return out
}

// resumedAfter finds the outage in times (when something succeeded, in
// order) after from: the longest gap between two successes, the last one
// before from counting as from. It returns the success that opened the
// gap (zero when it is from) and the one that closed it (zero when none
// came after from).
func resumedAfter(times []time.Time, from time.Time) (last, first time.Time) {
	prev := time.Time{}
	var gap time.Duration = -1
	for _, at := range times {
		if !at.After(from) {
			continue
		}
		start := prev
		if start.IsZero() {
			start = from
		}
		if d := at.Sub(start); d > gap {
			gap, last, first = d, prev, at
		}
		prev = at
	}
	return last, first
}

// logRestart logs the new TN pod's timeline (created, its container
// started, ready) against the kill, and the lines of the TN's, the CNs'
// and the proxy's logs since the kill that tell what each waited for.
func (m *moCluster) logRestart(t *testing.T, kill time.Time, since func(time.Time) string) {
	t.Helper()
	pod, err := env.client.CoreV1().Pods(m.ns).Get(context.Background(), moClusterTN+"-0", metav1.GetOptions{})
	if err != nil {
		t.Logf("the TN pod: %v", err)
		return
	}
	var started, ready time.Time
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "mo" && c.State.Running != nil {
			started = c.State.Running.StartedAt.Time
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == "Ready" {
			ready = c.LastTransitionTime.Time
		}
	}
	t.Logf("The new TN pod (times to the second): created %s after the kill, its container started %s, ready %s",
		since(pod.CreationTimestamp.Time), since(started), since(ready))
	for _, l := range []struct{ pod, pattern string }{
		{moClusterTN + "-0", "open-tae|DNShard|start.*server|heartbeat task started|logtail"},
		{moClusterCN + "-0", "logtail|push client|reconnect|connected to server|bind changed|no TN|txn.*backend"},
		{moClusterProxy + "-0", "route failed|failed to connect|no available"},
	} {
		out, err := kubectl("logs", "-n", m.ns, l.pod, "-c", "mo", "--timestamps", "--since-time", kill.UTC().Format(time.RFC3339))
		if err != nil {
			t.Logf("logs of %s: %v", l.pod, err)
			continue
		}
		re := regexp.MustCompile(l.pattern)
		var lines []string
		for _, line := range strings.Split(out, "\n") {
			if re.MatchString(line) {
				if len(line) > 260 {
					line = line[:260] + "…"
				}
				lines = append(lines, line)
			}
		}
		if len(lines) > 40 {
			lines = append(lines[:20], append([]string{fmt.Sprintf("… %d lines …", len(lines)-40)}, lines[len(lines)-20:]...)...)
		}
		t.Logf("%s since the kill, lines matching %q:\n%s", l.pod, l.pattern, strings.Join(lines, "\n"))
	}
}

// killLog deletes the log store's pod under writes: the cluster's one log
// store (HAKeeper and the log shard) comes back on its volume as the same
// store, and the writes go on.
func (m *moCluster) killLog(t *testing.T) { m.killUnderWrites(t, moClusterLog+"-0") }

// killCN deletes a CN's pod under writes: the proxy sends new sessions to
// the other.
func (m *moCluster) killCN(t *testing.T) { m.killUnderWrites(t, moClusterCN+"-1") }

// killUnderWrites deletes the pod under writes and waits until it is back
// and every set Ready; every acknowledged write must be there.
func (m *moCluster) killUnderWrites(t *testing.T, pod string) {
	m.underWrites(t, func() {
		m.deletePod(pod)
		m.waitAllReady(4 * time.Minute)
	})
}

// rollCNs changes the CNs' configuration under writes: they restart one
// at a time, each drained first. The cluster has run a while by now, and
// MatrixOne's own connections to the CNs exist (internalSessions): each
// drain still ends by its session count, well before drainTimeout.
func (m *moCluster) rollCNs(t *testing.T) {
	m.internalSessions(t)
	before := map[string]types.UID{}
	for i := range 2 {
		pod := fmt.Sprintf("%s-%d", moClusterCN, i)
		before[pod] = m.podUID(pod)
	}
	start := time.Now()
	m.underWrites(t, func() {
		if out, err := kubectlStdin(m.manifests("debug"), "apply", "-f", "-"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		eventually(t, 2*drainTimeout, "both CNs restarted and every set Ready", func(context.Context) error {
			for pod, uid := range before {
				if now := m.podUID(pod); now == "" || now == uid {
					return fmt.Errorf("%s not restarted", pod)
				}
			}
			return m.allReady()
		})
	})
	// Two drains one after the other: one at its timeout would take
	// drainTimeout alone.
	if took := time.Since(start); took >= drainTimeout {
		errorf(t, "the two CNs rolled in %s, not within drainTimeout (%s): a drain ran to its timeout", took.Round(time.Second), drainTimeout)
	} else {
		t.Logf("The two CNs rolled in %s", took.Round(time.Second))
	}
	m.expectDrained(t, moClusterCN+"-0", moClusterCN+"-1")
}

// internalSessions waits (up to 3 minutes) until the CNs hold one of
// MatrixOne's own connections that the controller used to count as a
// session: one not through the proxy (proxy_host empty), not the task
// service's (database mo_task, which it never counted) and not root's (the
// operator's statements), such as a system log writer's (mo_logger); and
// logs them. A drain proves nothing about them without one.
func (m *moCluster) internalSessions(t *testing.T) {
	t.Helper()
	const query = "select node_id, user from processlist() p where p.proxy_host = '' and p.user <> 'root' " +
		"and (p.db is null or p.db <> 'mo_task')"
	var out string
	err := waitFor(3*time.Minute, func(context.Context) error {
		var err error
		if out, err = m.sql(query); err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 2 && m.isCN(fields[0]) {
				return nil
			}
		}
		return fmt.Errorf("no internal connection on a CN yet:\n%s", out)
	})
	if err != nil {
		errorf(t, "MatrixOne's own connections never showed on the CNs: the drains prove nothing about them: %v", err)
		return
	}
	t.Logf("MatrixOne's own connections on the CNs (node, user), which no proxy moves:\n%s", out)
}

// isCN reports whether uuid is the store of one of the CNSet's pods.
func (m *moCluster) isCN(uuid string) bool {
	for i := range 3 {
		if uuid == wire.StoreID(m.ns, fmt.Sprintf("%s-%d", moClusterCN, i)) {
			return true
		}
	}
	return false
}

// underWrites runs action while a client inserts rows through the proxy,
// one after another, then checks that every acknowledged row is there,
// and returns when each acknowledged write returned. A
// write that failed may still have been applied; only acknowledged ones
// are required. The action starts once a write went through, and the
// writes go on until a few more went through after it: the cluster must
// serve again.
func (m *moCluster) underWrites(t *testing.T, action func()) (ackedAt []time.Time) {
	m.acked = nil
	var mu sync.Mutex
	var acked []int
	var failures []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := m.next
			m.next++
			_, err := m.sql(fmt.Sprintf("insert into e2e.t values (%d)", id))
			mu.Lock()
			if err == nil {
				acked = append(acked, id)
				ackedAt = append(ackedAt, time.Now())
				m.acked = append(m.acked, ackedWrite{id: id, at: ackedAt[len(ackedAt)-1]})
			} else {
				failures = append(failures, err.Error())
			}
			mu.Unlock()
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	eventually(t, time.Minute, "a first write acknowledged", func(context.Context) error {
		if ackedCount() == 0 {
			return fmt.Errorf("no write acknowledged yet")
		}
		return nil
	})
	stopWriter := sync.OnceFunc(func() { close(stop); <-done })
	defer stopWriter()
	start := time.Now()
	action()
	after := ackedCount()
	eventually(t, 3*time.Minute, "writes acknowledged after the action", func(context.Context) error {
		if n := ackedCount() - after; n < 3 {
			return fmt.Errorf("%d writes acknowledged after the action", n)
		}
		return nil
	})
	stopWriter()
	t.Logf("%d writes acknowledged, %d failed, in %s", len(acked), len(failures), time.Since(start).Round(time.Second))
	if len(failures) > 0 {
		t.Logf("the first failure: %s", failures[0])
	}
	have, err := m.storedRows()
	if err != nil {
		fatalNow(t, err)
	}
	missing := 0
	for _, id := range acked {
		if !have[id] {
			missing++
		}
	}
	if missing > 0 {
		errorf(t, "%d of %d acknowledged writes are missing", missing, len(acked))
	}
	return ackedAt
}

// storedRows reads e2e.t's ids through the proxy, retrying for a minute.
func (m *moCluster) storedRows() (map[int]bool, error) {
	var out string
	if err := waitFor(time.Minute, func(context.Context) error {
		var err error
		out, err = m.sql("select id from e2e.t order by id")
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading e2e.t: %w", err)
	}
	have := map[int]bool{}
	for _, f := range strings.Fields(out) {
		if id, err := strconv.Atoi(f); err == nil {
			have[id] = true
		}
	}
	return have, nil
}

func (m *moCluster) sql(query string) (string, error) {
	return moSQL(m.ns, fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, m.ns), m.password(), query)
}

// password is root's, from the Secret the LogSet generated.
func (m *moCluster) password() string {
	m.t.Helper()
	if m.rootPassword == "" {
		s, err := env.client.CoreV1().Secrets(m.ns).Get(context.Background(), moClusterLog+"-root", metav1.GetOptions{})
		if err != nil {
			fatalf(m.t, "root's password: %v", err)
		}
		m.rootPassword = string(s.Data["password"])
	}
	return m.rootPassword
}

func (m *moCluster) get(name string, obj client.Object) {
	m.t.Helper()
	if err := m.c.Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: name}, obj); err != nil {
		fatalNow(m.t, err)
	}
}

// allReady says which set is not Ready at its generation; nil when all
// are.
func (m *moCluster) allReady() error {
	for name, obj := range map[string]client.Object{moClusterLog: &mov1.LogSet{}, moClusterTN: &mov1.TNSet{},
		moClusterCN: &mov1.CNSet{}, moClusterProxy: &mov1.ProxySet{}} {
		if err := m.c.Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: name}, obj); err != nil {
			return err
		}
		core := obj.(interface{ StatusCore() *commonv1.StatusCore }).StatusCore()
		if err := settled(obj.GetGeneration(), core); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func (m *moCluster) waitAllReady(timeout time.Duration) {
	m.t.Helper()
	eventually(m.t, timeout, "every MatrixOne set Ready", func(context.Context) error { return m.allReady() })
}

// deletePod deletes the pod name and waits until its replacement is
// ready.
func (m *moCluster) deletePod(name string) {
	m.t.Helper()
	old := m.podUID(name)
	if err := env.client.CoreV1().Pods(m.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		fatalNow(m.t, err)
	}
	eventually(m.t, 3*time.Minute, name+" re-created and ready", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(m.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case p.UID == old:
			return fmt.Errorf("%s not re-created yet", name)
		case !podReady(p):
			return fmt.Errorf("%s not ready", name)
		}
		return nil
	})
}

// podUID is the UID of the pod name, "" when there is none.
func (m *moCluster) podUID(name string) types.UID { return livePodUID(m.ns, name) }

// scaleCNs scales the CNs out to 3, opens sessions through the proxy that
// set a variable and read it every 2 s, then scales in to 1 under writes:
// the two leaving CNs drain, the proxy moves their sessions to the CN that
// stays, and every session still reads its variable, never broken.
func (m *moCluster) scaleCNs(t *testing.T) {
	m.patch(`{"spec":{"replicas":3}}`)
	m.waitCNs(3)
	const sessions, reads = 3, 60
	type result struct {
		out string
		err error
	}
	results := make(chan result, sessions)
	for i := range sessions {
		go func() {
			statements := []string{fmt.Sprintf("set @v = %d", 100+i)}
			for range reads {
				statements = append(statements, "pause 2s", "select @v")
			}
			out, err := m.session(statements)
			results <- result{out, err}
		}()
	}
	time.Sleep(8 * time.Second) // the sessions connected and set their variable
	onLeaving := m.sessionsOn(t, moClusterCN+"-1", moClusterCN+"-2")
	if onLeaving == 0 {
		fatalNow(t, "no session on the CNs that leave: the drain would move nothing")
	}
	m.underWrites(t, func() {
		start := time.Now()
		m.patch(`{"spec":{"replicas":1}}`)
		m.waitCNs(1)
		if took := time.Since(start); took >= drainTimeout {
			errorf(t, "the scale-in took %s, not within drainTimeout (%s): a drain ran to its timeout", took.Round(time.Second), drainTimeout)
		}
	})
	if len(results) > 0 {
		fatalNow(t, "a session ended before the scale-in did: it proves nothing")
	}
	for range sessions {
		r := <-results
		if r.err != nil {
			errorf(t, "a session broke: %v", r.err)
			continue
		}
		lines := strings.Fields(r.out)
		if len(lines) != reads {
			errorf(t, "a session read %d values, not %d", len(lines), reads)
		}
		for _, l := range lines {
			if l != lines[0] {
				errorf(t, "a session's variable changed from %s to %s", lines[0], l)
				break
			}
		}
	}
	m.expectDrained(t, moClusterCN+"-1", moClusterCN+"-2")
}

// operatorKilledMidDrain scales the CNs in from 2 to 1 under writes and
// kills the leading operator replica as soon as cn-1's drain started
// (the drain lasts DrainSettle, 15 s, at least): the operator that takes
// over finds the drain on the pod and finishes it.
func (m *moCluster) operatorKilledMidDrain(t *testing.T) {
	m.patch(`{"spec":{"replicas":2}}`)
	m.waitCNs(2)
	leaving := moClusterCN + "-1"
	m.underWrites(t, func() {
		m.patch(`{"spec":{"replicas":1}}`)
		var started time.Time
		eventually(t, time.Minute, leaving+" draining", func(ctx context.Context) error {
			p, err := env.client.CoreV1().Pods(m.ns).Get(ctx, leaving, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if started, err = time.Parse(time.RFC3339, p.Annotations["matrixone.steward.dev/drain-started"]); err != nil {
				return fmt.Errorf("no drain yet: %v", p.Annotations)
			}
			return nil
		})
		pod := killLeader(t)
		t.Logf("Killed the operator %s %s after the drain started", pod, time.Since(started).Round(time.Second))
		m.waitCNs(1)
	})
	m.expectDrained(t, leaving)
}

// waitCNs waits until the CNSet is Ready with n CNs, and only n pods:
// longer than a drain may last (drainTimeout), so that a drain that ran to
// its timeout fails the caller's own check, which says so, not this wait.
func (m *moCluster) waitCNs(n int) {
	m.t.Helper()
	start := time.Now()
	eventually(m.t, drainTimeout+2*time.Minute, fmt.Sprintf("the CNSet Ready with %d CNs", n), func(ctx context.Context) error {
		cn := &mov1.CNSet{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: moClusterCN}, cn); err != nil {
			return err
		}
		if err := settled(cn.Generation, &cn.Status.StatusCore); err != nil {
			return err
		}
		pods, err := env.client.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=cn"})
		if err != nil {
			return err
		}
		if len(pods.Items) != n || int(cn.Status.ReadyReplicas) != n {
			return fmt.Errorf("%d pods, %d ready", len(pods.Items), cn.Status.ReadyReplicas)
		}
		return nil
	})
	m.t.Logf("The CNSet Ready with %d CNs after %s", n, time.Since(start).Round(time.Second))
}

// session runs statements on one connection through the proxy (the smoke
// client's sql-session) and returns what it printed.
func (m *moCluster) session(statements []string) (string, error) {
	args := []string{"exec", "-n", m.ns, "client", "--", "/smoke", "sql-session", "--timeout", "10m",
		"--server", fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, m.ns), "--user", "root", "--password", m.password()}
	out, err := kubectl(append(args, statements...)...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
	}
	return out, nil
}

// accountGroup creates the account acc1 and a CNSet labeled {account:
// [acc1]}: every session of acc1 through the proxy lands on that CNSet's
// CN, and none of root's does (the proxy routes a session to the CNs whose
// labels match its account's, and sys's to the CNs without labels). About
// 640 MiB more memory.
// errNotSeen: a session did not show in processlist while it lasted.
var errNotSeen = errors.New("not seen")

func (m *moCluster) accountGroup(t *testing.T) {
	const account, password, group = "acc1", "Acc1-pw", "mo-acc1"
	// CREATE ACCOUNT makes the account's system tables and can outlast
	// the client's 5 s deadline on a busy node (seen once, right after the
	// scale-in to one CN); IF NOT EXISTS makes a retry safe.
	eventually(t, 2*time.Minute, "account "+account+" created", func(context.Context) error {
		_, err := m.sql(fmt.Sprintf("create account if not exists %s admin_name 'admin' identified by '%s'", account, password))
		return err
	})
	manifest := fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: CNSet
metadata: {name: %s, namespace: %s}
spec:
  logSet: %s
  replicas: 1
  labels: [{key: account, values: [%s]}]
  image: %s
  imagePullPolicy: Never
  resources: {limits: {memory: 640Mi}}
  storage: {size: 256Mi}
`, group, m.ns, moClusterLog, account, m.image)
	start := time.Now()
	if out, err := kubectlStdin(manifest, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	labeled := wire.StoreID(m.ns, group+"-0")
	eventually(t, 5*time.Minute, group+" Ready with its label in HAKeeper", func(ctx context.Context) error {
		cn := &mov1.CNSet{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: group}, cn); err != nil {
			return err
		}
		if err := settled(cn.Generation, &cn.Status.StatusCore); err != nil {
			return err
		}
		if len(cn.Status.Stores) != 1 || len(cn.Status.Stores[0].Labels) != 1 ||
			!slices.Equal(cn.Status.Stores[0].Labels[0].Values, []string{account}) {
			return fmt.Errorf("stores %+v", cn.Status.Stores)
		}
		return nil
	})
	t.Logf("%s Ready and labeled after %s", group, time.Since(start).Round(time.Second))
	// observe opens a session as user, and reads from root's processlist
	// the CN it landed on while it sleeps.
	observe := func(user, password, where string) (string, error) {
		done := make(chan error, 1)
		go func() {
			out, err := kubectl("exec", "-n", m.ns, "client", "--", "/smoke", "sql", "--timeout", "30s",
				"--server", fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, m.ns), "--user", user, "--password", password, "select sleep(15)")
			if err != nil {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
			}
			done <- err
		}()
		var node string
		err := wait.PollUntilContextTimeout(context.Background(), 300*time.Millisecond, 14*time.Second, true, func(context.Context) (bool, error) {
			out, err := m.sql("select node_id from processlist() p where p.proxy_host <> '' and " + where + " and p.info like 'select sleep%'")
			node = strings.TrimSpace(out)
			return err == nil && node != "" && !strings.Contains(node, "\n"), nil
		})
		if sleepErr := <-done; sleepErr != nil {
			return "", sleepErr
		}
		if err != nil || node == "" {
			return "", fmt.Errorf("no session of %s in processlist: %w: %w", user, errNotSeen, err)
		}
		return node, nil
	}
	// nodeOf is observe, with a session that root's processlist did not
	// show while it slept opened again, up to three times (under the
	// load of the whole suite, each processlist read takes seconds): a
	// session seen on the wrong CN is an answer, one not seen is none.
	nodeOf := func(user, password, where string) (node string, err error) {
		for range 3 {
			if node, err = observe(user, password, where); !errors.Is(err, errNotSeen) {
				return node, err
			}
			t.Logf("Opened again: %v", err)
		}
		return node, err
	}
	// The proxies learn the label from HAKeeper within seconds: wait for
	// one session on the group, then every next one must land there.
	eventually(t, 2*time.Minute, "a session of "+account+" on "+group, func(context.Context) error {
		node, err := nodeOf(account+":admin", password, "p.account = '"+account+"'")
		if err == nil && node != labeled {
			err = fmt.Errorf("on %s", node)
		}
		return err
	})
	ours, roots := 1, 0
	for i := range 4 {
		if node, err := nodeOf(account+":admin", password, "p.account = '"+account+"'"); err != nil || node != labeled {
			errorf(t, "session %d of %s: on %q, not %s (%v)", i, account, node, group+"-0", err)
		} else {
			ours++
		}
		if node, err := nodeOf("root", m.password(), "p.account = 'sys' and p.user = 'root'"); err != nil || node == labeled {
			errorf(t, "session %d of root: on %q (%v), which only %s's sessions reach", i, node, err, account)
		} else {
			roots++
		}
	}
	t.Logf("%d sessions of %s on %s, %d of root on the unlabeled CNs", ours, account, group+"-0", roots)
}

// scaleProxies adds a second proxy and removes it again while the writer
// inserts through the proxies' Service: both proxies serve while there are
// two (HAKeeper hears from both), and every acknowledged row is there
// after each change. A session on the proxy that leaves is cut; the
// writer's next statement connects again.
func (m *moCluster) scaleProxies(t *testing.T) {
	waitProxies := func(n int) {
		t.Helper()
		eventually(t, 3*time.Minute, fmt.Sprintf("%d proxies up, the ProxySet Ready", n), func(ctx context.Context) error {
			p := &mov1.ProxySet{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: moClusterProxy}, p); err != nil {
				return err
			}
			if err := settled(p.Generation, &p.Status.StatusCore); err != nil {
				return err
			}
			if len(p.Status.Stores) != n || p.Status.ReadyReplicas != int32(n) {
				return fmt.Errorf("stores %+v, %d ready", p.Status.Stores, p.Status.ReadyReplicas)
			}
			for _, s := range p.Status.Stores {
				if s.State != mov1.StoreUp {
					return fmt.Errorf("store %+v", s)
				}
			}
			return nil
		})
	}
	patchProxies := func(n int) {
		t.Helper()
		if out, err := kubectl("patch", "proxyset", moClusterProxy, "-n", m.ns, "--type", "merge", "-p",
			fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	}
	for _, n := range []int{2, 1} {
		m.underWrites(t, func() {
			start := time.Now()
			patchProxies(n)
			waitProxies(n)
			t.Logf("%d proxies after %s", n, time.Since(start).Round(time.Second))
		})
	}
}

// sessionsOn counts the client sessions the CNs of pods hold, from
// processlist() (those through the proxy, as the controller counts), and
// logs every CN's.
func (m *moCluster) sessionsOn(t *testing.T, pods ...string) int {
	t.Helper()
	out, err := m.sql("select node_id, count(*) from processlist() p where p.proxy_host <> '' group by node_id")
	if err != nil {
		fatalNow(t, err)
	}
	t.Logf("Sessions by CN:\n%s", out)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		for _, pod := range pods {
			if fields[0] == wire.StoreID(m.ns, pod) {
				count, _ := strconv.Atoi(fields[1])
				n += count
			}
		}
	}
	return n
}

// expectDrained checks the CNSet's events: each of pods drained before it
// went, by its session count, none at the timeout (DrainTimedOut), its
// lock tables moved to other CNs by the TN's
// lock table allocator (the lock service handshake on real MatrixOne).
func (m *moCluster) expectDrained(t *testing.T, pods ...string) {
	t.Helper()
	events, err := env.client.CoreV1().Events(m.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	for _, pod := range pods {
		found := false
		for _, e := range events.Items {
			if e.InvolvedObject.Name != moClusterCN || !strings.HasPrefix(e.Message, pod+" drained") {
				continue
			}
			if e.Reason != mov1.EventDrained || !strings.Contains(e.Message, "its lock tables moved") {
				errorf(t, "%s: %s %s", pod, e.Reason, e.Message)
			}
			found = true
		}
		if !found {
			errorf(t, "no event says %s drained", pod)
		}
	}
}
