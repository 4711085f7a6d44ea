//go:build bench

package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// The cluster benchmarks run against the cluster KUBECONFIG names, with
// Steward installed in steward-system (make bench).
const (
	operatorNamespace = "steward-system"
	leaseName         = "steward.steward.dev"
	idleClusters      = 20
	idleWindow        = time.Minute
)

type kube struct {
	cs kubernetes.Interface
	c  client.WithWatch
}

func connect(b *testing.B) *kube {
	b.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		path = "/var/lib/localkube/kubeconfig"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := zkv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	k := &kube{}
	if k.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	if k.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		b.Fatal(err)
	}
	return k
}

// BenchmarkCreate creates a 3-server cluster and reports apply→Ready split
// into the operator's share (apply to StatefulSet, and all pods ready to
// Ready) and the pods' (StatefulSet to all pods ready: scheduling, volumes,
// the JVM and the election), and the API requests the operator made for it
// beyond its idle baseline (leader election).
func BenchmarkCreate(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-create")
	baseline := k.operatorMetrics(b)
	time.Sleep(20 * time.Second)
	idle := k.operatorMetrics(b).minus(baseline).per(20 * time.Second)

	var operator, pods, total time.Duration
	var requests, writes float64
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("zk-%d", i)
		before := k.operatorMetrics(b)
		start := time.Now()
		k.create(b, ns, name, 3)
		var stsAt, podsAt, readyAt time.Duration
		for readyAt == 0 {
			time.Sleep(100 * time.Millisecond)
			now := time.Since(start)
			if stsAt == 0 && k.exists(ns, name, &appsv1.StatefulSet{}) {
				stsAt = now
			}
			if stsAt != 0 && podsAt == 0 && k.podsReady(b, ns, name) == 3 {
				podsAt = now
			}
			if podsAt != 0 && k.ready(b, ns, name) {
				readyAt = now
			}
			if now > 5*time.Minute {
				b.Fatalf("%s not Ready after 5 minutes", name)
			}
		}
		used := k.operatorMetrics(b).minus(before)
		baselineShare := idle.scale(time.Since(start))
		requests += used.total - baselineShare.total
		writes += used.writes - baselineShare.writes
		operator += stsAt + (readyAt - podsAt)
		pods += podsAt - stsAt
		total += readyAt
		b.Logf("%s: StatefulSet after %s, pods ready after %s, Ready after %s", name,
			stsAt.Round(10*time.Millisecond), podsAt.Round(10*time.Millisecond), readyAt.Round(10*time.Millisecond))
		k.delete(b, ns, name)
	}
	n := float64(b.N)
	b.ReportMetric(total.Seconds()/n, "s-apply-to-ready")
	b.ReportMetric(operator.Seconds()/n, "s-operator")
	b.ReportMetric(pods.Seconds()/n, "s-pods-and-jvm")
	b.ReportMetric(requests/n, "api-requests/cluster")
	b.ReportMetric(writes/n, "api-writes/cluster")
	b.Logf("idle operator baseline: %.0f requests/min (%.0f writes/min: leader election)", idle.total*60, idle.writes*60)
}

// BenchmarkIdle creates 20 one-server clusters, waits until all are Ready
// and settled, then counts for a minute the changes to those clusters and
// their children (any writer) and the operator's API requests beyond its
// baseline; it also reports the operator's resident memory.
func BenchmarkIdle(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-idle")
	empty := k.operatorMetrics(b)
	for b.Loop() {
		for i := range idleClusters {
			k.create(b, ns, fmt.Sprintf("idle-%d", i), 1)
		}
		deadline := time.Now().Add(10 * time.Minute)
		for {
			ready := 0
			for i := range idleClusters {
				if k.ready(b, ns, fmt.Sprintf("idle-%d", i)) {
					ready++
				}
			}
			if ready == idleClusters {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d clusters Ready after 10 minutes", ready, idleClusters)
			}
			time.Sleep(2 * time.Second)
		}
		time.Sleep(30 * time.Second) // let the last passes settle
		changes := k.countChanges(b, ns, idleWindow)
		before := k.operatorMetrics(b)
		leader := float64(k.countLeaseRenewals(b, idleWindow))
		used := k.operatorMetrics(b).minus(before)
		b.ReportMetric(float64(changes), "object-changes/min")
		b.ReportMetric((used.writes-leader)*60/idleWindow.Seconds(), "operator-writes/min")
		b.ReportMetric(used.total*60/idleWindow.Seconds(), "operator-requests/min")
		rss := k.operatorMetrics(b).rss
		b.ReportMetric(rss/(1<<20), "MiB-rss-20-clusters")
		b.ReportMetric(empty.rss/(1<<20), "MiB-rss-no-cluster")
		b.Logf("%d idle clusters for %s: %d changes to them or their children; operator: %.0f requests, %.0f writes (leader election: %.0f)",
			idleClusters, idleWindow, changes, used.total, used.writes, leader)
	}
}

// countLeaseRenewals watches the operator's leader-election Lease for d
// and counts its updates: the writes leader election makes.
func (k *kube) countLeaseRenewals(b *testing.B, d time.Duration) int {
	ctx, cancel := context.WithTimeout(b.Context(), d)
	defer cancel()
	leases := k.cs.CoordinationV1().Leases(operatorNamespace)
	lease, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + leaseName, ResourceVersion: lease.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for e := range w.ResultChan() {
		if e.Type == watch.Modified {
			n++
		}
	}
	return n
}

// metrics are the operator's counters read from its /metrics.
type metrics struct {
	total, writes, rss float64
}

func (m metrics) minus(o metrics) metrics {
	return metrics{total: m.total - o.total, writes: m.writes - o.writes, rss: m.rss}
}

func (m metrics) per(d time.Duration) metrics {
	return metrics{total: m.total / d.Seconds(), writes: m.writes / d.Seconds()}
}

func (m metrics) scale(d time.Duration) metrics {
	return metrics{total: m.total * d.Seconds(), writes: m.writes * d.Seconds()}
}

// operatorMetrics reads rest_client_requests_total and the resident memory
// from the leading replica's metrics endpoint (the one that reconciles)
// through the API server's pod proxy. The proxy cannot present a scraper's
// token, so make bench installs the chart with metrics.secure=false (plain
// HTTP on the same port).
func (k *kube) operatorMetrics(b *testing.B) metrics {
	b.Helper()
	lease, err := k.cs.CoordinationV1().Leases(operatorNamespace).Get(b.Context(), leaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		b.Fatalf("the operator's Lease: %v (no holder, or %v)", lease, err)
	}
	leader, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	raw, err := k.cs.CoreV1().Pods(operatorNamespace).ProxyGet("http", leader, "8443", "/metrics", nil).DoRaw(b.Context())
	if err != nil {
		b.Fatalf("operator metrics: %v", err)
	}
	var m metrics
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "rest_client_requests_total{"):
			m.total += v
			if !strings.Contains(name, `method="GET"`) {
				m.writes += v
			}
		case name == "process_resident_memory_bytes":
			m.rss = v
		}
	}
	return m
}

// countChanges watches the clusters and their children in ns for d and
// counts the changes.
func (k *kube) countChanges(b *testing.B, ns string, d time.Duration) int {
	ctx, cancel := context.WithTimeout(b.Context(), d)
	defer cancel()
	opts := metav1.ListOptions{}
	var watchers []watch.Interface
	start := func(w watch.Interface, err error) {
		if err != nil {
			b.Fatal(err)
		}
		watchers = append(watchers, w)
	}
	rv := func(list client.ObjectList) string {
		if err := k.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		return list.(metav1.ListInterface).GetResourceVersion()
	}
	opts.ResourceVersion = rv(&appsv1.StatefulSetList{})
	start(k.cs.AppsV1().StatefulSets(ns).Watch(ctx, opts))
	opts.ResourceVersion = rv(&corev1.ConfigMapList{})
	start(k.cs.CoreV1().ConfigMaps(ns).Watch(ctx, opts))
	opts.ResourceVersion = rv(&corev1.ServiceList{})
	start(k.cs.CoreV1().Services(ns).Watch(ctx, opts))
	var zks zkv1.ZookeeperClusterList
	start(k.c.Watch(ctx, &zks, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv(&zkv1.ZookeeperClusterList{})}}))
	changes := 0
	done := make(chan struct{})
	events := make(chan watch.Event)
	for _, w := range watchers {
		go func() {
			for e := range w.ResultChan() {
				select {
				case events <- e:
				case <-done:
					return
				}
			}
		}()
	}
	for {
		select {
		case e := <-events:
			if e.Type != watch.Bookmark {
				changes++
				if o, ok := e.Object.(client.Object); ok {
					b.Logf("change: %s %T %s", e.Type, e.Object, o.GetName())
				}
			}
		case <-ctx.Done():
			close(done)
			for _, w := range watchers {
				w.Stop()
			}
			return changes
		}
	}
}

func (k *kube) namespace(b *testing.B, prefix string) string {
	b.Helper()
	ns, err := k.cs.CoreV1().Namespaces().Create(b.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		// Clusters first, while the operator runs to finalize them.
		_ = k.c.DeleteAllOf(context.Background(), &zkv1.ZookeeperCluster{}, client.InNamespace(ns.Name))
		for range 120 {
			var list zkv1.ZookeeperClusterList
			if err := k.c.List(context.Background(), &list, client.InNamespace(ns.Name)); err != nil || len(list.Items) == 0 {
				break
			}
			time.Sleep(time.Second)
		}
		_ = k.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func (k *kube) create(b *testing.B, ns, name string, replicas int32) {
	b.Helper()
	zk := &zkv1.ZookeeperCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: zkv1.ZookeeperClusterSpec{
			Replicas: replicas, Heap: "64m", ImagePullPolicy: corev1.PullNever,
			Storage: commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete},
		},
	}
	if err := k.c.Create(b.Context(), zk); err != nil {
		b.Fatal(err)
	}
}

func (k *kube) delete(b *testing.B, ns, name string) {
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k.c.Delete(b.Context(), zk); err != nil {
		b.Fatal(err)
	}
	for k.exists(ns, name, &zkv1.ZookeeperCluster{}) {
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kube) exists(ns, name string, obj client.Object) bool {
	return k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj) == nil
}

func (k *kube) ready(b *testing.B, ns, name string) bool {
	zk := &zkv1.ZookeeperCluster{}
	if err := k.c.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, zk); err != nil {
		return false
	}
	c := meta.FindStatusCondition(zk.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == zk.Generation
}

func (k *kube) podsReady(b *testing.B, ns, name string) int {
	pods, err := k.cs.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + name + ",app.kubernetes.io/component=server"})
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}
