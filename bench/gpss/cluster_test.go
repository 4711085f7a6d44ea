//go:build bench

package gpss

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

const (
	// simulatorImage is images/gpss-simulator's.
	simulatorImage = "localhost/gpss-simulator:1.0"
	idleClusters   = 10
	idleWindow     = time.Minute
)

type kube struct{ *benchkube.Kube }

func connect(b *testing.B) *kube { return &kube{benchkube.Connect(b, 50, 100, gpssv1.AddToScheme)} }

// BenchmarkCreate creates a 3-instance cluster with a managed etcd, five
// times, and reports apply → Ready split into the etcd's share (apply to
// its member ready) and the instances' (etcd ready to Ready), and the
// operator's API requests and writes per cluster beyond its idle baseline.
func BenchmarkCreate(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-gpss", &gpssv1.GpssCluster{})
	idle := k.IdleUsage(b, 20*time.Second)

	const rounds = 5
	var etcdTotal, total time.Duration
	var requests, writes float64
	for b.Loop() {
		for i := range rounds {
			name := fmt.Sprintf("g-%d", i)
			before := k.OperatorUsage(b)
			start := time.Now()
			k.create(b, ns, name, 3)
			var etcdAt, readyAt time.Duration
			for readyAt == 0 {
				time.Sleep(100 * time.Millisecond)
				now := time.Since(start)
				if etcdAt == 0 && k.etcdReady(b, ns, name) {
					etcdAt = now
				}
				if k.ready(b, ns, name) {
					readyAt = now
				}
				if now > 5*time.Minute {
					b.Fatalf("%s not Ready after 5 minutes", name)
				}
			}
			used := k.OperatorUsage(b).Minus(before)
			share := idle.Over(time.Since(start))
			requests += used.Requests - share.Requests
			writes += used.Writes - share.Writes
			etcdTotal += etcdAt
			total += readyAt
			b.Logf("%s: etcd ready after %s, Ready after %s", name, etcdAt.Round(10*time.Millisecond), readyAt.Round(10*time.Millisecond))
			k.delete(b, ns, name)
		}
	}
	n := float64(b.N * rounds)
	b.ReportMetric(total.Seconds()/n, "s-apply-to-ready")
	b.ReportMetric(etcdTotal.Seconds()/n, "s-etcd")
	b.ReportMetric(requests/n, "api-requests/cluster")
	b.ReportMetric(writes/n, "api-writes/cluster")
	b.Logf("idle operator baseline: %.0f requests/min (%.0f writes/min: leader election)", idle.Requests*60, idle.Writes*60)
}

// BenchmarkIdle creates idleClusters one-instance clusters, waits until
// they are Ready and settled, then counts for idleWindow the changes to
// them and their children (any writer) and the operator's writes beyond
// leader election.
func BenchmarkIdle(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-gpss-idle", &gpssv1.GpssCluster{})
	for b.Loop() {
		names := make([]string, idleClusters)
		for i := range names {
			names[i] = fmt.Sprintf("idle-%d", i)
			k.create(b, ns, names[i], 1)
		}
		benchkube.WaitAllReady(b, names, func(name string) bool { return k.ready(b, ns, name) }, 10*time.Minute)
		k.ReportIdle(b, ns, idleClusters, idleWindow,
			&appsv1.StatefulSetList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}, &gpssv1.GpssClusterList{})
		for _, name := range names {
			k.delete(b, ns, name)
		}
	}
}

func (k *kube) create(b *testing.B, ns, name string, replicas int32) {
	b.Helper()
	g := &gpssv1.GpssCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gpssv1.GpssClusterSpec{
			Replicas: replicas, Image: simulatorImage, ImagePullPolicy: corev1.PullNever, ClusterID: name,
			Etcd: gpssv1.EtcdSpec{Managed: &gpssv1.ManagedEtcd{Storage: commonv1.StorageSpec{
				ReclaimPolicy: commonv1.ReclaimDelete}}},
		},
	}
	if err := k.C.Create(b.Context(), g); err != nil {
		b.Fatal(err)
	}
}

// delete deletes the cluster and waits until it and its pods are gone.
func (k *kube) delete(b *testing.B, ns, name string) {
	g := &gpssv1.GpssCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k.C.Delete(b.Context(), g); err != nil {
		b.Fatal(err)
	}
	for {
		var pods corev1.PodList
		err := k.C.List(b.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})
		if err == nil && len(pods.Items) == 0 && k.C.Get(b.Context(), client.ObjectKeyFromObject(g), g) != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kube) etcdReady(b *testing.B, ns, name string) bool {
	sts := &appsv1.StatefulSet{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name + "-etcd"}, sts); err != nil {
		return false
	}
	return sts.Status.ReadyReplicas == ptr.Deref(sts.Spec.Replicas, 1)
}

func (k *kube) ready(b *testing.B, ns, name string) bool {
	g := &gpssv1.GpssCluster{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil {
		return false
	}
	c := meta.FindStatusCondition(g.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == g.Generation
}
