//go:build bench

package oceanbase

import (
	"fmt"
	"path"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// backups is how many backups BenchmarkBackup takes.
const backups = 3

// obsim's default delays of a backup job and a restore job
// (internal/oceanbase/obsim/knobs.go): the floor of each.
const (
	obsimBackupDelay  = 2 * time.Second
	obsimRestoreDelay = 2 * time.Second
)

// BenchmarkBackup runs one tenant's data protection on a one-observer
// cluster, its destinations directories on the observer's volume: a
// policy's apply → archiving, backups full and incremental from creation to
// completion (each beside obsim's job delay) with the operator's API
// requests per backup, a restore into a new tenant from apply → Ready
// (beside obsim's restore delay), and the policy idle for a minute: the
// changes to the namespace's objects and the operator's writes.
func BenchmarkBackup(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-ob-backup", &obv1.OBTenantBackup{}, &obv1.OBTenantBackupPolicy{}, &obv1.OBTenant{}, &obv1.OBCluster{})
	idle := k.IdleUsage(b, 20*time.Second)
	for b.Loop() {
		k.createOne(b, ns, "ob")
		benchWait(b, "the cluster Ready", 5*time.Minute, func() bool { return k.ready(b, ns, "ob") })
		k.tenant(b, ns, "t1", nil)
		benchWait(b, "the tenant Ready", 3*time.Minute, func() bool { return k.tenantReady(b, ns, "t1") })

		dest := func(name string) obv1.BackupDestination {
			return obv1.BackupDestination{Path: "file://" + path.Join(build.StoreDir, "backups", name)}
		}
		policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
			Tenant: "t1", Archive: obv1.LogArchiveSpec{Destination: dest("archive")},
			DataBackup: obv1.DataBackupSpec{Destination: dest("data"), FullSchedule: "@yearly"},
		}}
		start := time.Now()
		if err := k.C.Create(b.Context(), policy); err != nil {
			b.Fatal(err)
		}
		benchWait(b, "the policy archives", 2*time.Minute, func() bool {
			p := &obv1.OBTenantBackupPolicy{}
			return k.C.Get(b.Context(), client.ObjectKeyFromObject(policy), p) == nil && ready(p.Status.Conditions, p.Generation)
		})
		archiving := time.Since(start)
		b.ReportMetric(archiving.Seconds(), "s-policy-to-archiving")
		b.Logf("Policy applied → archiving (its destinations and delete policy set) in %s", archiving.Round(10*time.Millisecond))

		var took time.Duration
		var requests float64
		for i := range backups {
			typ := obv1.BackupFull
			if i > 0 {
				typ = obv1.BackupIncremental
			}
			bk := &obv1.OBTenantBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b%d", i)},
				Spec: obv1.OBTenantBackupSpec{Tenant: "t1", Type: typ}}
			before := k.OperatorUsage(b)
			start := time.Now()
			if err := k.C.Create(b.Context(), bk); err != nil {
				b.Fatal(err)
			}
			benchWait(b, "backup "+bk.Name+" completed", 2*time.Minute, func() bool {
				return k.C.Get(b.Context(), client.ObjectKeyFromObject(bk), bk) == nil && bk.Status.JobStatus == obv1.BackupJobCompleted &&
					ready(bk.Status.Conditions, bk.Generation)
			})
			d := time.Since(start)
			used := k.OperatorUsage(b).Minus(before)
			requests += used.Requests - idle.Over(d).Requests
			took += d
			b.Logf("%s backup %s: created → completed (set %d) in %s; obsim's job takes %s",
				typ, bk.Name, bk.Status.BackupSetID, d.Round(10*time.Millisecond), obsimBackupDelay)
		}
		b.ReportMetric(took.Seconds()/backups, "s-backup-create-to-completed")
		b.ReportMetric(requests/backups, "api-requests/backup")

		// Idle with the policy set: the archive advances every second.
		k.ReportIdle(b, ns, 1, idleWindow, &obv1.OBTenantBackupPolicyList{}, &obv1.OBTenantBackupList{}, &obv1.OBTenantList{})

		k.copySecret(b, ns, "t1-root", "t2-root")
		start = time.Now()
		k.tenant(b, ns, "t2", &obv1.OBTenantSource{Restore: &obv1.OBTenantRestoreSource{Data: dest("data"), Archive: dest("archive")}})
		benchWait(b, "the restored tenant Ready", 3*time.Minute, func() bool { return k.tenantReady(b, ns, "t2") })
		restored := time.Since(start)
		b.ReportMetric(restored.Seconds(), "s-restore-apply-to-ready")
		b.Logf("Restore applied → the tenant Ready (unit config, pools, the restore, its activation, the root password checked) in %s; obsim's restore job takes %s",
			restored.Round(10*time.Millisecond), obsimRestoreDelay)
	}
}

// createOne creates a cluster of one observer.
func (k *kube) createOne(b *testing.B, ns, name string) {
	b.Helper()
	ob := &obv1.OBCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: obv1.OBClusterSpec{
			Image: obsimImage, ImagePullPolicy: corev1.PullNever,
			Zones: []obv1.OBZoneSpec{{Name: "z1"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("100m")}},
			Storage: commonv1.StorageSpec{Size: ptr.To(resource.MustParse("64Mi")), ReclaimPolicy: commonv1.ReclaimDelete},
		},
	}
	if err := k.C.Create(b.Context(), ob); err != nil {
		b.Fatal(err)
	}
}

// tenant creates the one-zone OBTenant name of cluster ob, from source.
func (k *kube) tenant(b *testing.B, ns, name string, source *obv1.OBTenantSource) {
	b.Helper()
	t := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}}, Source: source, ReclaimPolicy: commonv1.ReclaimDelete,
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("5Gi")},
	}}
	if err := k.C.Create(b.Context(), t); err != nil {
		b.Fatal(err)
	}
}

// copySecret copies the Secret from into to.
func (k *kube) copySecret(b *testing.B, ns, from, to string) {
	b.Helper()
	s := &corev1.Secret{}
	if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: from}, s); err != nil {
		b.Fatal(err)
	}
	if err := k.C.Create(b.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: to}, Data: s.Data}); err != nil {
		b.Fatal(err)
	}
}

func (k *kube) tenantReady(b *testing.B, ns, name string) bool {
	t := &obv1.OBTenant{}
	return k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: name}, t) == nil && ready(t.Status.Conditions, t.Generation) &&
		(t.Status.Operation == nil || !t.Status.Operation.Phase.Active())
}

func ready(conds []metav1.Condition, generation int64) bool {
	c := meta.FindStatusCondition(conds, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// benchWait polls cond every 200 ms until it holds, or fails after timeout.
func benchWait(b *testing.B, what string, timeout time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("not %s after %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
