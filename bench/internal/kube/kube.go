//go:build bench

package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stewardhq/steward/test/portforward"
)

// Where make bench installs Steward: its namespace and its leader-election
// Lease.
const (
	OperatorNamespace = "steward-system"
	LeaseName         = "steward.steward.dev"
)

// Kube is a benchmark's connection to the cluster KUBECONFIG names.
type Kube struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	CS     kubernetes.Interface
	C      client.WithWatch

	operator operatorEndpoint
}

// KubeconfigPath is $KUBECONFIG, else localkube's admin kubeconfig.
func KubeconfigPath() string {
	if path := os.Getenv("KUBECONFIG"); path != "" {
		return path
	}
	return "/var/lib/localkube/kubeconfig"
}

// Connect connects with the client rate limit qps and burst (a negative
// qps: none) and a scheme of Kubernetes' types and those addToScheme add.
func Connect(tb testing.TB, qps float32, burst int, addToScheme ...func(*runtime.Scheme) error) *Kube {
	tb.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			tb.Fatal(err)
		}
	}
	k := &Kube{Config: cfg, Scheme: scheme}
	if k.CS, err = kubernetes.NewForConfig(cfg); err != nil {
		tb.Fatal(err)
	}
	if k.C, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		tb.Fatal(err)
	}
	return k
}

// Namespace creates a namespace named after prefix and deletes it when the
// benchmark ends: first the objects of the clusters' kinds (empty objects
// of each), while the operator runs to finalize them, then the namespace.
func (k *Kube) Namespace(tb testing.TB, prefix string, clusters ...client.Object) string {
	tb.Helper()
	ns, err := k.CS.CoreV1().Namespaces().Create(tb.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		for _, obj := range clusters {
			_ = k.C.DeleteAllOf(ctx, obj, client.InNamespace(ns.Name))
			list, err := k.ListOf(obj)
			if err != nil {
				tb.Log(err)
				continue
			}
			for range 600 {
				if err := k.C.List(ctx, list, client.InNamespace(ns.Name), client.Limit(1)); err != nil || apimeta.LenList(list) == 0 {
					break
				}
				time.Sleep(time.Second)
			}
		}
		_ = k.CS.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// ListOf returns an empty list of obj's kind.
func (k *Kube) ListOf(obj client.Object) (client.ObjectList, error) {
	gvk, err := apiutil.GVKForObject(obj, k.Scheme)
	if err != nil {
		return nil, err
	}
	gvk.Kind += "List"
	o, err := k.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("no list type for %s: %w", gvk, err)
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", gvk)
	}
	return list, nil
}

// CountLeaseRenewals watches the operator's leader-election Lease for d
// and counts its updates: the writes leader election makes.
func (k *Kube) CountLeaseRenewals(tb testing.TB, d time.Duration) int {
	tb.Helper()
	return k.CountLeaseRenewalsEvery(tb, d, 0, nil)
}

// CountLeaseRenewalsEvery is CountLeaseRenewals that also calls tick every
// interval of the window (on the caller's goroutine, so tick may fail tb),
// for figures sampled through it; none when every is 0.
func (k *Kube) CountLeaseRenewalsEvery(tb testing.TB, d, every time.Duration, tick func()) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), d)
	defer cancel()
	var ticks <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		ticks = t.C
	}
	leases := k.CS.CoordinationV1().Leases(OperatorNamespace)
	lease, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + LeaseName, ResourceVersion: lease.ResourceVersion})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return n
			}
			if e.Type == watch.Modified {
				n++
			}
		case <-ticks:
			tick()
		}
	}
}

// WaitForLeader waits until the operator's Lease names a replica that is
// Ready and not stopping, and returns its pod: just after a rollout the
// Lease may still name a replica on its way out, whose counters stop with
// it.
func (k *Kube) WaitForLeader(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := ""
		lease, err := k.CS.CoordinationV1().Leases(OperatorNamespace).Get(tb.Context(), LeaseName, metav1.GetOptions{})
		switch {
		case err != nil:
			why = err.Error()
		case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
			why = "the Lease has no holder"
		default:
			leader, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
			pod, err := k.CS.CoreV1().Pods(OperatorNamespace).Get(tb.Context(), leader, metav1.GetOptions{})
			switch {
			case err != nil:
				why = fmt.Sprintf("the Lease names %s: %v", leader, err)
			case pod.DeletionTimestamp != nil:
				why = fmt.Sprintf("the Lease names %s, which is stopping", leader)
			case !PodReady(pod):
				why = fmt.Sprintf("the Lease names %s, which is not Ready", leader)
			default:
				return leader
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no leader of the operator after %s: %s", timeout, why)
		}
		time.Sleep(time.Second)
	}
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Operator is one scrape of the leading replica's metrics.
type Operator struct {
	// Pod is the leader's pod; Started its process start time. A scrape
	// of another pod or process than the one before does not subtract.
	Pod     string
	Started float64
	Metrics
}

// SameProcess reports whether o and before were scraped from one process,
// so that their counters subtract.
func (o Operator) SameProcess(before Operator) bool {
	return o.Pod == before.Pod && o.Started == before.Started
}

// Requests is the operator's API requests (controller-runtime's
// rest_client_requests_total) that match, as label, value pairs (code,
// method, host).
func (o Operator) Requests(match ...string) float64 {
	return o.Sum("rest_client_requests_total", match...)
}

// Writes is the operator's API requests other than GET.
func (o Operator) Writes() float64 {
	return o.Requests() - o.Requests("method", "GET")
}

// RSS is the operator's resident memory, in bytes.
func (o Operator) RSS() float64 { return o.Sum("process_resident_memory_bytes") }

// CPU is the CPU time the operator's process has used, in seconds.
func (o Operator) CPU() float64 { return o.Sum("process_cpu_seconds_total") }

// APIServerMetrics reads the API server's own /metrics, keeping the
// samples whose name keep accepts. Its counters cover every client.
func (k *Kube) APIServerMetrics(tb testing.TB, keep func(name string) bool) Metrics {
	tb.Helper()
	raw, err := k.CS.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(tb.Context())
	if err != nil {
		tb.Fatalf("API server metrics: %v", err)
	}
	return ParseMetrics(raw, keep)
}

// CountChanges watches the objects of the lists' kinds in ns for d and
// counts their changes (any writer), logging the first few.
func (k *Kube) CountChanges(tb testing.TB, ns string, d time.Duration, lists ...client.ObjectList) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), d)
	defer cancel()
	events := make(chan watch.Event)
	for _, list := range lists {
		w, err := k.watchFromNow(ctx, ns, list)
		if err != nil {
			tb.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for e := range w.ResultChan() {
				select {
				case events <- e:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	const logged = 50
	changes := 0
	for {
		select {
		case e := <-events:
			if e.Type == watch.Bookmark || e.Type == watch.Error {
				continue
			}
			changes++
			if o, ok := e.Object.(client.Object); ok && changes <= logged {
				tb.Logf("change: %s %T %s", e.Type, e.Object, o.GetName())
			}
		case <-ctx.Done():
			if changes > logged {
				tb.Logf("(%d more changes)", changes-logged)
			}
			return changes
		}
	}
}

// watchFromNow watches the objects of list's kind in ns from their
// current resourceVersion: changes only, not the objects already there.
// The watch ends with ctx.
func (k *Kube) watchFromNow(ctx context.Context, ns string, list client.ObjectList) (watch.Interface, error) {
	if err := k.C.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	rv := list.(metav1.ListInterface).GetResourceVersion()
	return k.C.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
}

// Usage is what the operator has used so far: its API requests, the writes
// among them, and its resident memory.
type Usage struct {
	Requests, Writes, RSS float64
}

// OperatorUsage reads the leader's Usage (OperatorMetrics).
func (k *Kube) OperatorUsage(tb testing.TB) Usage {
	tb.Helper()
	return usageOf(k.OperatorMetrics(tb))
}

// IdleUsage is the operator's rate of requests and writes over d while
// nothing else runs (its baseline: leader election, resyncs), per second.
// It measures again when the two scrapes came from different processes (a
// new leader in between), whose counters do not subtract.
func (k *Kube) IdleUsage(tb testing.TB, d time.Duration) Usage {
	tb.Helper()
	for {
		first := k.OperatorMetrics(tb)
		time.Sleep(d)
		second := k.OperatorMetrics(tb)
		if second.SameProcess(first) {
			return usageOf(second).Minus(usageOf(first)).Per(d)
		}
		tb.Logf("The leading operator changed from %s to %s while measuring its idle baseline; measuring again", first.Pod, second.Pod)
	}
}

func usageOf(o Operator) Usage {
	return Usage{Requests: o.Requests(), Writes: o.Writes(), RSS: o.RSS()}
}

// Minus is the requests and writes since before; RSS stays u's.
func (u Usage) Minus(before Usage) Usage {
	return Usage{Requests: u.Requests - before.Requests, Writes: u.Writes - before.Writes, RSS: u.RSS}
}

// Per is the rate of u's requests and writes over d, per second.
func (u Usage) Per(d time.Duration) Usage {
	return Usage{Requests: u.Requests / d.Seconds(), Writes: u.Writes / d.Seconds()}
}

// Over is what a rate (Per) amounts to over d.
func (u Usage) Over(d time.Duration) Usage {
	return Usage{Requests: u.Requests * d.Seconds(), Writes: u.Writes * d.Seconds()}
}

// WaitAllReady waits until ready holds for every one of names, failing the
// benchmark after timeout.
func WaitAllReady(tb testing.TB, names []string, ready func(name string) bool, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := 0
		for _, name := range names {
			if ready(name) {
				n++
			}
		}
		if n == len(names) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d clusters Ready after %s", n, len(names), timeout)
		}
		time.Sleep(2 * time.Second)
	}
}

// ReportIdle lets the clusters in ns settle, then counts for window the
// changes to the objects of lists' kinds there (any writer) and the
// operator's requests and writes beyond leader election, and reports them
// as object-changes/min, operator-writes/min and operator-requests/min.
func (k *Kube) ReportIdle(b *testing.B, ns string, clusters int, window time.Duration, lists ...client.ObjectList) {
	b.Helper()
	time.Sleep(30 * time.Second) // let the last passes settle
	changes := k.CountChanges(b, ns, window, lists...)
	before := k.OperatorUsage(b)
	leader := float64(k.CountLeaseRenewals(b, window))
	used := k.OperatorUsage(b).Minus(before)
	b.ReportMetric(float64(changes), "object-changes/min")
	b.ReportMetric((used.Writes-leader)*60/window.Seconds(), "operator-writes/min")
	b.ReportMetric(used.Requests*60/window.Seconds(), "operator-requests/min")
	b.Logf("%d idle clusters for %s: %d changes to them or their children; operator: %.0f requests, %.0f writes (leader election: %.0f)",
		clusters, window, changes, used.Requests, used.Writes, leader)
}

// Kubectl runs localkube's kubectl (in root's .cache/localkube/bin) with
// the benchmark's kubeconfig and returns its combined output.
func Kubectl(root string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, ".cache", "localkube", "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+KubeconfigPath())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// PortForward forwards a free port of 127.0.0.1 to port of target (such
// as "svc/versitygw") in ns with localkube's kubectl until the benchmark
// ends, and returns the local address.
func PortForward(tb testing.TB, root, ns, target string, port int) string {
	tb.Helper()
	addr, stop, err := portforward.Start(filepath.Join(root, ".cache", "localkube", "bin", "kubectl"), KubeconfigPath(), ns, target, port)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return addr
}
