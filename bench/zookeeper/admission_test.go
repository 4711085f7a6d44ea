//go:build bench

package zookeeper

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// admissionRounds is how many requests of each kind BenchmarkAdmission times.
const admissionRounds = 50

// BenchmarkAdmission times what the webhooks cost an apply, through the
// API server as kubectl meets it: server-side dry-run creates of a
// ZookeeperCluster (defaulting, validation, and the dry run of the
// children it would make), against updates that change a field the
// children do not depend on (spec.paused: the same children, so no dry
// run of them) and a plain ConfigMap create (no webhook at all). It prints
// the median and 99th percentile of each and the ratios to the ConfigMap.
func BenchmarkAdmission(b *testing.B) {
	k := connect(b)
	ns := k.namespace(b, "bench-admission")
	zk := func(name string) *zkv1.ZookeeperCluster {
		return &zkv1.ZookeeperCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: zkv1.ZookeeperClusterSpec{
				Replicas: 3, Heap: "64m", ImagePullPolicy: corev1.PullNever,
				Storage: commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete},
				PodPlacement: commonv1.PodPlacement{
					NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				},
				Paused: true, // nothing is started: the cost of admission only
			},
		}
	}
	stored := zk("stored")
	if err := k.C.Create(b.Context(), stored); err != nil {
		b.Fatal(err)
	}
	timed := func(what string, do func(i int) error) []time.Duration {
		var d []time.Duration
		for i := range admissionRounds {
			start := time.Now()
			if err := do(i); err != nil {
				b.Fatalf("%s %d: %v", what, i, err)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d
	}
	for b.Loop() {
		plain := timed("ConfigMap create", func(i int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns}}
			return k.C.Create(b.Context(), cm, client.DryRunAll)
		})
		create := timed("ZookeeperCluster create", func(i int) error {
			return k.C.Create(b.Context(), zk(fmt.Sprintf("zk-%d", i)), client.DryRunAll)
		})
		update := timed("ZookeeperCluster update", func(i int) error {
			patch := fmt.Sprintf(`{"spec":{"paused":%t}}`, i%2 == 0)
			return k.C.Patch(b.Context(), stored, client.RawPatch("application/merge-patch+json", []byte(patch)))
		})
		p := func(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }
		for _, row := range []struct {
			what string
			d    []time.Duration
		}{
			{"ConfigMap create (no webhook)", plain},
			{"ZookeeperCluster create (children dry-run)", create},
			{"ZookeeperCluster update (same children)", update},
		} {
			fmt.Printf("%-45s median %6.1f ms  p99 %6.1f ms  (%.1fx the ConfigMap's median)\n", row.what,
				ms(p(row.d, 0.5)), ms(p(row.d, 0.99)), float64(p(row.d, 0.5))/float64(p(plain, 0.5)))
		}
		b.ReportMetric(ms(p(create, 0.5)), "create-ms")
		b.ReportMetric(ms(p(update, 0.5)), "update-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
