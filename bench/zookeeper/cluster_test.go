//go:build bench

package zookeeper

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

// The cluster benchmarks run against the cluster KUBECONFIG names, with
// Steward installed in steward-system (make bench).
const (
	idleClusters = 20
	idleWindow   = time.Minute
)

// kube is the benchmarks' connection, with the ZooKeeper helpers below.
type kube struct{ *benchkube.Kube }

func connect(b *testing.B) *kube {
	return &kube{benchkube.Connect(b, 50, 100, zkv1.AddToScheme)}
}

// BenchmarkCreate creates a 3-server cluster and reports apply→Ready split
// into the operator's share (apply to StatefulSet, and all pods ready to
// Ready) and the pods' (StatefulSet to all pods ready: scheduling, volumes,
// the JVM and the election), and the API requests the operator made for it
// beyond its idle baseline (leader election).
func BenchmarkCreate(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-create")
	idle := k.IdleUsage(b, 20*time.Second)

	var operator, pods, total time.Duration
	var requests, writes float64
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("zk-%d", i)
		before := k.OperatorUsage(b)
		start := time.Now()
		k.create(b, ns, name, 3)
		stsAt, podsAt, readyAt := k.waitCreated(b, ns, name, start)
		used := k.OperatorUsage(b).Minus(before)
		baselineShare := idle.Over(time.Since(start))
		requests += used.Requests - baselineShare.Requests
		writes += used.Writes - baselineShare.Writes
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
	b.Logf("idle operator baseline: %.0f requests/min (%.0f writes/min: leader election)", idle.Requests*60, idle.Writes*60)
}

// BenchmarkIdle creates 20 one-server clusters, waits until all are Ready
// and settled, then counts for a minute the changes to those clusters and
// their children (any writer) and the operator's API requests beyond its
// baseline; it also reports the operator's resident memory.
func BenchmarkIdle(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-idle")
	empty := k.OperatorUsage(b)
	for b.Loop() {
		names := make([]string, idleClusters)
		for i := range names {
			names[i] = fmt.Sprintf("idle-%d", i)
			k.create(b, ns, names[i], 1)
		}
		benchkube.WaitAllReady(b, names, func(name string) bool { return k.ready(b, ns, name) }, 10*time.Minute)
		k.ReportIdle(b, ns, idleClusters, idleWindow,
			&appsv1.StatefulSetList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}, &zkv1.ZookeeperClusterList{})
		b.ReportMetric(k.OperatorUsage(b).RSS/(1<<20), "MiB-rss-20-clusters")
		b.ReportMetric(empty.RSS/(1<<20), "MiB-rss-no-cluster")
	}
}

func (k *kube) namespace(b *testing.B, prefix string) string {
	return k.Namespace(b, prefix, &zkv1.ZookeeperCluster{})
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
	if err := k.C.Create(b.Context(), zk); err != nil {
		b.Fatal(err)
	}
}

// delete deletes the cluster name and waits until it and its pods are gone.
func (k *kube) delete(b *testing.B, ns, name string) {
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k.C.Delete(b.Context(), zk); err != nil {
		b.Fatal(err)
	}
	// Until its pods are gone too: the next round's pods would otherwise
	// share the node with them.
	for k.exists(ns, name, &zkv1.ZookeeperCluster{}) || len(k.serverPods(b, ns, name)) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kube) exists(ns, name string, obj client.Object) bool {
	return k.C.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj) == nil
}

func (k *kube) ready(b *testing.B, ns, name string) bool {
	zk := &zkv1.ZookeeperCluster{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, zk); err != nil {
		return false
	}
	c := meta.FindStatusCondition(zk.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == zk.Generation
}

func (k *kube) podsReady(b *testing.B, ns, name string) int {
	n := 0
	for _, p := range k.serverPods(b, ns, name) {
		if benchkube.PodReady(&p) {
			n++
		}
	}
	return n
}
