//go:build bench

package scale

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

// report prints one run's figures: b.ReportMetric for the headline ones,
// b.Logf for the tables behind them.
type report struct {
	b   *testing.B
	n   float64
	kds []kind
	// clusterKinds are the Kinds of the clusters and of their parts, as
	// the tracker counts changes.
	clusterKinds []string
}

// controllers returns the controllers of the run's kinds.
func (p *report) controllers() []controller {
	var cs []controller
	for _, kd := range p.kds {
		cs = append(cs, kd.controllers...)
	}
	return cs
}

// shorts returns the prefixes of the run's clusters' names.
func (p *report) shorts() []string {
	var s []string
	for _, kd := range p.kds {
		s = append(s, kd.short)
	}
	return s
}

func (p *report) create(before, after scrape, start time.Time, applied time.Duration, setsAt, readyAt time.Time,
	setLat, readyLat []time.Duration, retries int64, plainRate float64) {
	b := p.b
	toSets, toReady := setsAt.Sub(start), readyAt.Sub(start)
	rate := p.n / toReady.Seconds()
	b.Logf("create: %.0f clusters applied in %s (%.0f/s through admission; %d creates retried); every StatefulSet existed after %s and was ready after %s",
		p.n, round(applied), p.n/applied.Seconds(), retries, round(toSets), round(toReady))
	b.Logf("create: %.2f clusters ready/s against %.0f plain creates/s of the API server: ratio %.4f (one cluster every %.0f plain creates)",
		rate, plainRate, rate/plainRate, plainRate/rate)
	b.Logf("create, per cluster, from its create: StatefulSets exist p50 %s p99 %s max %s; ready p50 %s p99 %s max %s",
		pct(setLat, 0.5), pct(setLat, 0.99), pct(setLat, 1), pct(readyLat, 0.5), pct(readyLat, 0.99), pct(readyLat, 1))
	b.ReportMetric(plainRate, "api-creates/s")
	b.ReportMetric(p.n/applied.Seconds(), "applies/s")
	b.ReportMetric(toSets.Seconds(), "s-to-all-statefulsets")
	b.ReportMetric(toReady.Seconds(), "s-to-all-ready")
	b.ReportMetric(rate, "clusters/s")
	b.ReportMetric(rate/plainRate, "clusters/api-create")
	p.requests("create", before, after, p.n, "cluster")
}

// stages prints where the pods' time went after their StatefulSets
// existed: the cluster's share of the create, past the operator's.
func (p *report) stages(podCreated, claimsBound, scheduled, ready []time.Duration) {
	q := func(d []time.Duration) string {
		return fmt.Sprintf("p50 %s p99 %s max %s", pct(d, 0.5), pct(d, 0.99), pct(d, 1))
	}
	p.b.Logf("create, per pod (%d), after its StatefulSet existed: pod created (StatefulSet controller) %s; "+
		"then its claims bound (provisioner, volume binder) %s; then scheduled %s; then Ready (kwok) %s",
		len(ready), q(podCreated), q(claimsBound), q(scheduled), q(ready))
}

// idleMinute samples the operator through the idle window, a minute at a
// time, to show how its CPU falls while the partition lasts: passes of
// clusters not Ready for long and probes of servers failing for long both
// back off with the time they have been failing, so the window's mean
// depends on when it starts and how long it lasts.
type idleMinute struct {
	b    *testing.B
	k    *benchkube.Kube
	prev benchkube.Operator
	at   time.Time
	i    int
	// last is the last minute's operator CPU, in cores; -1 until a minute
	// is measured.
	last float64
}

func newIdleMinute(b *testing.B, k *benchkube.Kube, from scrape) *idleMinute {
	return &idleMinute{b: b, k: k, prev: from.op, at: from.at, last: -1}
}

func (m *idleMinute) tick() {
	cur, at := m.k.OperatorMetrics(m.b), time.Now()
	defer func() { m.prev, m.at = cur, at }()
	m.i++
	if !cur.SameProcess(m.prev) {
		m.b.Logf("idle minute %d: the operator's leader changed; not measured", m.i)
		return
	}
	d := cur.Minus(m.prev.Metrics)
	wall := at.Sub(m.at).Seconds()
	m.last = (cur.CPU() - m.prev.CPU()) / wall
	m.b.Logf("idle minute %d: the operator used %.3f cores; %.0f passes, %.0f probe calls (%.0f answers changed) a minute",
		m.i, m.last, d.Sum("steward_reconcile_duration_seconds_count")/wall*60,
		d.Sum("steward_probe_duration_seconds_count")/wall*60, d.Sum("steward_probe_changes_total")/wall*60)
}

func (p *report) idle(from, to scrape, renewals int, changes map[string]int, examples []string, lastMinute float64) {
	b := p.b
	window := to.at.Sub(from.at)
	minutes := window.Minutes()
	p.requests("idle", from, to, minutes, "min")
	if !to.op.SameProcess(from.op) {
		return
	}
	d := to.op.Minus(from.op.Metrics)
	var status, children int
	var parts []string
	for what, n := range changes {
		parts = append(parts, fmt.Sprintf("%s: %d", what, n))
		if slices.ContainsFunc(p.clusterKinds, func(k string) bool { return strings.HasPrefix(what, k+" ") }) {
			status += n
		} else {
			children += n
		}
	}
	sort.Strings(parts)
	if lastMinute >= 0 {
		b.ReportMetric(lastMinute, "cores-idle-last-min")
	}
	b.Logf("idle, %s: %d lease renewals; changes seen by watches: %d of the clusters, %d of their children (%s); first: %s",
		round(window), renewals, status, children, strings.Join(parts, ", "), strings.Join(examples, ", "))
	p50, p99 := p.wait(d, 0.5), p.wait(d, 0.99)
	b.ReportMetric(d.Sum("rest_client_requests_total")/minutes, "idle-requests/min")
	b.ReportMetric((to.op.Writes()-from.op.Writes()-float64(renewals))/minutes, "idle-writes-beyond-lease/min")
	b.ReportMetric(float64(status)/minutes, "idle-cluster-changes/min")
	b.ReportMetric(float64(renewals)/minutes, "lease-renewals/min")
	b.ReportMetric(p50*1000, "idle-queue-wait-p50-ms")
	b.ReportMetric(p99*1000, "idle-queue-wait-p99-ms")
}

// againstBudget prints the operator's requests per created cluster, as
// the audit log counts them (both replicas': the standby serves admission
// too, and dry-runs children; the leader's client metrics miss those),
// against the run's budget: its kind's, or the mean of its kinds'.
func (p *report) againstBudget(perCluster float64) {
	budget := 0.0
	for _, kd := range p.kds {
		budget += kd.budget / float64(len(p.kds))
	}
	verdict := "within it"
	if perCluster > budget {
		verdict = fmt.Sprintf("OVER it by %.1f", perCluster-budget)
	}
	p.b.Logf("create: %.1f requests per created cluster (audit log, both replicas) against a budget of %.1f: %s", perCluster, budget, verdict)
	p.b.ReportMetric(budget, "budget-requests/cluster")
}

// wait is the q-quantile of the time objects waited in the queue of the
// run's worst controller by it (requests prints each controller's).
func (p *report) wait(d benchkube.Metrics, q float64) float64 {
	worst := 0.0
	for _, c := range p.controllers() {
		if w := d.Quantile(q, "workqueue_queue_duration_seconds", "name", c.queue); w > worst {
			worst = w
		}
	}
	return worst
}

func (p *report) delete(from, to scrape, start, goneAt, emptyAt time.Time) {
	b := p.b
	b.Logf("delete: every cluster gone %s after the delete, every pod and claim %s after", round(goneAt.Sub(start)), round(emptyAt.Sub(start)))
	b.ReportMetric(goneAt.Sub(start).Seconds(), "s-to-all-gone")
	b.ReportMetric(emptyAt.Sub(start).Seconds(), "s-to-all-pods-gone")
	p.requests("delete", from, to, p.n, "cluster")
}

// requests prints what the operator asked of the API server between two
// scrapes, per unit (per cluster, or per minute): its client's counts by
// method and code, the 409s and 404s the API server answered (every
// client's), the operator's requests one by one from the audit log, and
// the CPU each process used.
func (p *report) requests(phase string, from, to scrape, per float64, unit string) {
	b := p.b
	wall := to.at.Sub(from.at).Seconds()
	if !to.op.SameProcess(from.op) {
		b.Errorf("%s: the operator's leader changed or restarted (%s started %.0f, then %s started %.0f): its counts do not subtract",
			phase, from.op.Pod, from.op.Started, to.op.Pod, to.op.Started)
	} else {
		d := to.op.Minus(from.op.Metrics)
		total, c409, c404 := d.Sum("rest_client_requests_total"), d.Sum("rest_client_requests_total", "code", "409"), d.Sum("rest_client_requests_total", "code", "404")
		b.Logf("%s: the operator's client: %.1f requests/%s, %.1f writes/%s, %.2f answered 409/%s, %.2f answered 404/%s; by method and code: %s",
			phase, total/per, unit, (to.op.Writes()-from.op.Writes())/per, unit, c409/per, unit, c404/per, unit,
			perUnit(d.GroupBy("rest_client_requests_total", []string{"method", "code"}), per))
		b.Logf("%s: the operator used %.1f CPU-s (%.2f cores over %s)", phase, to.op.CPU()-from.op.CPU(), (to.op.CPU()-from.op.CPU())/wall, round(to.at.Sub(from.at)))
		for _, c := range p.controllers() {
			b.Logf("%s: %s: the operator's actions per %s: %s; passes per %s by result: %s (p50 %s, p99 %s); probe calls per %s: %.1f, failed: %.1f, answers changed: %.1f",
				phase, c.kind, unit, perUnit(d.GroupBy("steward_actions_total", []string{"action"}, "kind", c.kind), per),
				unit, perUnit(d.GroupBy("steward_reconcile_duration_seconds_count", []string{"result"}, "kind", c.kind), per),
				seconds(d.Quantile(0.5, "steward_reconcile_duration_seconds", "kind", c.kind)),
				seconds(d.Quantile(0.99, "steward_reconcile_duration_seconds", "kind", c.kind)),
				unit, d.Sum("steward_probe_duration_seconds_count", "kind", c.kind)/per, d.Sum("steward_probe_failures_total", "kind", c.kind)/per,
				d.Sum("steward_probe_changes_total", "kind", c.kind)/per)
		}
		if unit == "cluster" {
			prefix := ""
			if phase != "create" {
				prefix = phase + "-"
			}
			b.ReportMetric(total/per, prefix+"requests/cluster")
			b.ReportMetric((to.op.Writes()-from.op.Writes())/per, prefix+"writes/cluster")
			b.ReportMetric(c409/per, prefix+"409/cluster")
			b.ReportMetric(c404/per, prefix+"404/cluster")
		}
		cpu := to.op.CPU() - from.op.CPU()
		if phase != "idle" {
			b.ReportMetric(cpu, "cpu-s-"+phase)
			b.ReportMetric(cpu/p.n, "cpu-s-"+phase+"/cluster")
		} else {
			b.ReportMetric(cpu/(wall/60), "cpu-s-idle/min")
			b.ReportMetric(cpu/(wall/60)/p.n, "cpu-s-idle/cluster-min")
			b.ReportMetric(cpu/wall, "cores-idle")
		}
		if phase == "create" {
			b.ReportMetric(p.wait(d, 0.5)*1000, "create-queue-wait-p50-ms")
			b.ReportMetric(p.wait(d, 0.99)*1000, "create-queue-wait-p99-ms")
		}
	}
	if to.op.SameProcess(from.op) {
		d := to.op.Minus(from.op.Metrics)
		for _, c := range p.controllers() {
			b.Logf("%s: workqueue %q: %.1f adds/%s, wait p50 %s p99 %s, work p50 %s p99 %s (bucket bounds a factor 10 apart), depth at the end %.0f; controller-runtime's results per %s: %s",
				phase, c.queue, d.Sum("workqueue_adds_total", "name", c.queue)/per, unit,
				seconds(d.Quantile(0.5, "workqueue_queue_duration_seconds", "name", c.queue)),
				seconds(d.Quantile(0.99, "workqueue_queue_duration_seconds", "name", c.queue)),
				seconds(d.Quantile(0.5, "workqueue_work_duration_seconds", "name", c.queue)),
				seconds(d.Quantile(0.99, "workqueue_work_duration_seconds", "name", c.queue)),
				to.op.Sum("workqueue_depth", "name", c.queue), unit,
				perUnit(d.GroupBy("controller_runtime_reconcile_total", []string{"result"}, "controller", c.queue), per))
		}
	}
	a := to.api.Minus(from.api)
	for _, code := range []string{"409", "404"} {
		rows := a.GroupBy("apiserver_request_total", []string{"verb", "group", "resource", "subresource"}, "code", code)
		b.Logf("%s: the API server answered %s (every client) %.0f times: %s", phase, code, a.Sum("apiserver_request_total", "code", code), perUnit(rows, per))
	}
	if shed := a.Sum("apiserver_request_total", "code", "429") + a.Sum("apiserver_flowcontrol_rejected_requests_total"); shed > 0 {
		b.Logf("%s: the API server shed %.0f requests (429, or rejected by priority and fairness)", phase, shed)
	}
	if audited, ok := p.audit(phase, from, to, per, unit); ok && phase == "create" {
		p.againstBudget(audited / per)
	}
	var cpu []string
	cpu = append(cpu, fmt.Sprintf("kube-apiserver %.2f", a.Sum("process_cpu_seconds_total")/wall))
	for _, name := range components {
		if f, ok := from.procs[name]; ok && name != "kube-apiserver" {
			cpu = append(cpu, fmt.Sprintf("%s %.2f", name, (to.procs[name].cpu-f.cpu)/wall))
		}
	}
	b.Logf("%s: cores used by the cluster's processes: %s", phase, strings.Join(cpu, ", "))
}

// audit prints the operator's requests from the audit log, grouped by
// verb, resource and answer, with the shapes of the names they touched,
// and returns how many there were; ok is false without the log.
func (p *report) audit(phase string, from, to scrape, per float64, unit string) (total float64, ok bool) {
	rows, ok := readAudit(from.audit, to.audit, p.shorts()...)
	if !ok {
		p.b.Logf("%s: no audit log at %s (or it was rotated): the operator's requests are not itemized", phase, auditLog())
		return 0, false
	}
	var lines []string
	for _, r := range rows {
		total += float64(r.count)
		line := fmt.Sprintf("  %8.2f/%s  %-22s %-44s %3d %-16s %s", float64(r.count)/per, unit, r.verb, r.resource, r.code, r.reason, r.topNames(3))
		if r.message != "" {
			line += "\n" + strings.Repeat(" ", 16) + "e.g. " + truncate(r.message, 200)
		}
		lines = append(lines, line)
	}
	p.b.Logf("%s: the operator's requests (audit log), per %s:\n%s", phase, unit, strings.Join(lines, "\n"))
	return total, true
}

// memory prints the operator's memory with no cluster, with all created
// and after the idle window, and per cluster; and the cluster's processes'.
func (p *report) memory(empty, created, idle scrape) {
	b := p.b
	const mib = 1 << 20
	rss := func(s scrape) float64 { return s.op.RSS() }
	heap := func(s scrape) float64 { return s.op.Sum("go_memstats_heap_inuse_bytes") }
	b.Logf("memory: the operator's RSS %.0f MiB with no cluster of this run, %.0f MiB with all created, %.0f MiB after idle: %.1f KiB/cluster (Go heap in use: %.0f, %.0f, %.0f MiB: %.1f KiB/cluster)",
		rss(empty)/mib, rss(created)/mib, rss(idle)/mib, (rss(idle)-rss(empty))/p.n/1024,
		heap(empty)/mib, heap(created)/mib, heap(idle)/mib, (heap(idle)-heap(empty))/p.n/1024)
	if !idle.op.SameProcess(empty.op) {
		b.Errorf("memory: the operator's leader changed or restarted during the run: the per-cluster figure is meaningless")
	}
	b.ReportMetric((rss(idle)-rss(empty))/p.n/1024, "KiB-rss/cluster")
	b.ReportMetric((heap(idle)-heap(empty))/p.n/1024, "KiB-heap/cluster")
	b.ReportMetric(rss(idle)/mib, "MiB-rss")
	// Where the RSS after idle goes, as the Go runtime sees it: the heap in
	// use, what the heap holds free but has not returned to the system,
	// goroutine stacks, and the heap's size at which the next collection
	// runs (the live heap after the last one, times 1 + GOGC/100).
	m := func(name string) float64 { return idle.op.Sum(name) / mib }
	b.Logf("memory after idle, by the Go runtime: heap in use %.0f MiB, heap free not yet returned %.0f MiB, stacks %.0f MiB, other runtime %.0f MiB; next collection at %.0f MiB",
		m("go_memstats_heap_inuse_bytes"), m("go_memstats_heap_idle_bytes")-m("go_memstats_heap_released_bytes"),
		m("go_memstats_stack_inuse_bytes"),
		m("go_memstats_sys_bytes")-m("go_memstats_heap_sys_bytes")-m("go_memstats_stack_sys_bytes"),
		m("go_memstats_next_gc_bytes"))
	var parts []string
	parts = append(parts, fmt.Sprintf("etcd database %.0f MiB", idle.api.Sum("apiserver_storage_size_bytes")/mib))
	for _, name := range components {
		if s, ok := idle.procs[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f MiB (%.0f with all created, peak %.0f)", name, s.rss/mib, created.procs[name].rss/mib, s.peak/mib))
		}
	}
	b.Logf("memory of the cluster after idle: %s", strings.Join(parts, ", "))
}

// restarts prints the operator's pods' restarts: an OOM kill under the
// chart's memory limit shows here.
func (p *report) restarts(k *benchkube.Kube, first, last scrape) {
	pods, err := k.CS.CoreV1().Pods(benchkube.OperatorNamespace).List(p.b.Context(), metav1.ListOptions{})
	if err != nil {
		p.b.Log(err)
		return
	}
	var parts []string
	for _, pod := range pods.Items {
		for _, c := range pod.Status.ContainerStatuses {
			s := fmt.Sprintf("%s/%s %d restarts", pod.Name, c.Name, c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil {
				s += fmt.Sprintf(" (last: %s at %s)", t.Reason, t.FinishedAt.Format(time.TimeOnly))
			}
			parts = append(parts, s)
		}
	}
	p.b.Logf("the operator's pods: %s; leader %s at the start, %s at the end", strings.Join(parts, ", "), first.op.Pod, last.op.Pod)
}

// perUnit formats groups of counts divided by per, largest first.
func perUnit(groups map[string]float64, per float64) string {
	if len(groups) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if groups[keys[i]] != groups[keys[j]] {
			return groups[keys[i]] > groups[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %.2f", strings.Join(strings.Fields(k), " "), groups[k]/per)
	}
	return strings.Join(parts, "; ")
}

// pct is the q-quantile of sorted durations.
func pct(sorted []time.Duration, q float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	return round(sorted[int(q*float64(len(sorted)-1))])
}

func round(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func seconds(s float64) string {
	if math.IsNaN(s) {
		return "- (nothing queued)"
	}
	return round(time.Duration(s * float64(time.Second)))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
