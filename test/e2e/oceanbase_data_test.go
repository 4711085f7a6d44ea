//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/s3"
)

// The tenant-data spec's clusters and tenants: t1 on ob is written to and
// backed up; t2 on ob is restored from its backups; t3 on ob2 follows t1.
const (
	obDR        = "ob2"
	obBucket    = "oceanbase"
	obS3Secret  = "s3-keys"
	obRestored  = "t2"
	obStandby   = "t3"
	obPrimaryPW = obTenant + "-root" // every tenant's root Secret: the standby's and the restored tenant's are their source's
)

// obDataScenario is the tenant-data spec's shared state.
type obDataScenario struct {
	obScenario
	writer *rowWriter
}

// oceanbaseDataSpec protects and operates a tenant's data, on obsim pods
// and versitygw, the S3 server: a tenant written to continuously is
// archived and backed up on schedule (a full, then an incremental backup);
// it is restored into a new tenant until a time between two writes, the
// manager killed while OceanBase restores: exactly the rows committed
// before that time are there, and OceanBase ran one restore; a standby on
// a second cluster follows it, and a switchover (the manager killed
// during it) swaps their roles with no committed row lost; the new
// primary's root password is changed and the old one refused; the new
// primary's cluster is deleted (reclaimPolicy Delete: its volume claims
// go) and the standby failed over.
func oceanbaseDataSpec(t *testing.T, in specInput) {
	installOperator(t)
	image := archiveTags(t, in.archive(t, "oceanbase-obsim"))[0]
	o := &obDataScenario{obScenario: obScenario{scenario: newScenario(t, "obdata", "obcluster", obName, "observer"), image: image}}
	defer func() {
		if o.writer != nil {
			o.writer.stop()
		}
	}()
	o.runSteps(t, o.dumpState, []step{
		{"a tenant written to is archived, then backed up full and incremental to S3 on schedule", o.backedUp},
		{"restored until a time between two writes, the manager killed meanwhile: exactly the rows before it", o.restored},
		{"a standby on another cluster follows; a switchover, the manager killed meanwhile, loses no row", o.switchover},
		{"the root password changed, the old one refused", o.password},
		{"the primary's cluster deleted, the standby failed over", o.failover},
	})
}

// cluster creates the one-observer OBCluster name.
func (o *obDataScenario) cluster(name string) {
	o.t.Helper()
	cluster := &obv1.OBCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.ns},
		Spec: obv1.OBClusterSpec{
			Image: o.image, ImagePullPolicy: corev1.PullNever,
			Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 1}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			Storage: commonv1.StorageSpec{Size: ptr.To(resource.MustParse("64Mi")), ReclaimPolicy: commonv1.ReclaimDelete},
		},
	}
	if err := o.c.Create(context.Background(), cluster); err != nil {
		fatalNow(o.t, err)
	}
}

// tenantSpec is a one-zone tenant of cluster.
func tenantSpec(ns, name, cluster string) *obv1.OBTenant {
	return &obv1.OBTenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: obv1.OBTenantSpec{
			Cluster: cluster, Zones: []obv1.OBTenantZone{{Name: "z1"}},
			Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("5Gi")},
		},
	}
}

// destination is an S3 destination on versitygw under the namespace's
// prefix.
func (o *obDataScenario) destination(name string) obv1.BackupDestination {
	return obv1.BackupDestination{Path: fmt.Sprintf("s3://%s/%s/%s", obBucket, o.ns, name),
		S3: &obv1.BackupS3{Endpoint: strings.TrimPrefix(s3Endpoint, "http://"), Region: s3Region, PathStyle: true, CredentialsSecret: obS3Secret}}
}

// tenantIs waits until the OBTenant name settles Ready with role.
func (o *obDataScenario) tenantIs(name, role string, timeout time.Duration) *obv1.OBTenant {
	o.t.Helper()
	tn := &obv1.OBTenant{}
	eventually(o.t, timeout, "OBTenant "+name+" is a Ready "+role, func(ctx context.Context) error {
		if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: name}, tn); err != nil {
			return err
		}
		if err := settled(tn.Generation, &tn.Status.StatusCore); err != nil {
			return err
		}
		if tn.Status.TenantRole != role {
			return fmt.Errorf("role %q", tn.Status.TenantRole)
		}
		return nil
	})
	return tn
}

// rowsOf returns app.t's ids through the cluster's client Service, as
// root@tenant with the shared root Secret.
func (o *obDataScenario) rowsOf(cluster, tenant string) ([]int, error) {
	saved := o.via
	o.via = cluster
	defer func() { o.via = saved }()
	rows, err := o.sqlAs("root@"+tenant, o.secret(obPrimaryPW), "SELECT id FROM app.t ORDER BY id")
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, r := range rows {
		id, err := strconv.Atoi(r[0])
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// rowsAre waits until app.t of tenant on cluster holds exactly want, and
// any of maybe (writes whose answer was lost: committed or not).
func (o *obDataScenario) rowsAre(cluster, tenant string, want, maybe []int, timeout time.Duration) {
	o.t.Helper()
	eventually(o.t, timeout, fmt.Sprintf("%s on %s holds %d rows", tenant, cluster, len(want)), func(context.Context) error {
		got, err := o.rowsOf(cluster, tenant)
		if err != nil {
			return err
		}
		got = slices.DeleteFunc(got, func(id int) bool { return slices.Contains(maybe, id) })
		if !slices.Equal(got, want) {
			return fmt.Errorf("rows %s, want %s", short(got), short(want))
		}
		return nil
	})
}

// short prints ids as first..last (n).
func short(ids []int) string {
	if len(ids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d (%d)", ids[0], ids[len(ids)-1], len(ids))
}

// backedUp creates the cluster and the tenant, starts a writer, and a
// policy archiving to versitygw with a full backup every 30 s and an
// incremental one every 20 s; a full and then an incremental backup
// complete, and their files are in the bucket.
func (o *obDataScenario) backedUp(t *testing.T) {
	keys := startS3(t)
	addr := portForward(t, s3Namespace, "svc/versitygw", 7070)
	store, err := s3.New(s3.Location{Endpoint: "http://" + addr, Region: s3Region, Bucket: obBucket, PathStyle: true, Credentials: keys})
	if err != nil {
		fatalNow(t, err)
	}
	if _, err := store.EnsureBucket(context.Background()); err != nil {
		fatalNow(t, err)
	}
	if out, err := kubectl("create", "secret", "generic", obS3Secret, "-n", o.ns,
		"--from-literal=AWS_ACCESS_KEY_ID="+keys.AccessKeyID, "--from-literal=AWS_SECRET_ACCESS_KEY="+keys.SecretAccessKey); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	o.cluster(obName)
	o.startClient()
	o.waitReady(1, 3*time.Minute)
	o.rootPassword = o.secret(obName + "-root")
	if err := o.c.Create(context.Background(), tenantSpec(o.ns, obTenant, obName)); err != nil {
		fatalNow(t, err)
	}
	o.tenantIs(obTenant, obv1.TenantRolePrimary, 2*time.Minute)
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)"} {
		if _, err := o.sqlAs("root@"+obTenant, o.secret(obPrimaryPW), q); err != nil {
			fatalf(t, "%s: %v", q, err)
		}
	}
	o.writer = o.startWriter()

	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Name: obTenant + "-backups", Namespace: o.ns},
		Spec: obv1.OBTenantBackupPolicySpec{
			Tenant:     obTenant,
			Archive:    obv1.LogArchiveSpec{Destination: o.destination("archive")},
			DataBackup: obv1.DataBackupSpec{Destination: o.destination("data"), FullSchedule: "@every 30s", IncrementalSchedule: "@every 20s"},
		}}
	// The first backup job slowed, for the manager to be killed while
	// OceanBase runs it.
	o.knobs(`{"backupDelay":"10s"}`)
	start := time.Now()
	if err := o.c.Create(context.Background(), policy); err != nil {
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "OceanBase runs the first backup job", func(ctx context.Context) error {
		var list obv1.OBTenantBackupList
		if err := o.c.List(ctx, &list, client.InNamespace(o.ns)); err != nil {
			return err
		}
		for _, b := range list.Items {
			if b.Status.JobID != 0 && b.Status.JobStatus == obv1.BackupJobDoing {
				return nil
			}
		}
		return fmt.Errorf("%d backups, none DOING", len(list.Items))
	})
	t.Logf("Killed the manager %s while OceanBase backs up", killLeader(t))
	o.knobs(`{"backupDelay":"2s"}`)
	var full, inc *obv1.OBTenantBackup
	eventually(t, 3*time.Minute, "a full and then an incremental backup completed", func(ctx context.Context) error {
		var list obv1.OBTenantBackupList
		if err := o.c.List(ctx, &list, client.InNamespace(o.ns)); err != nil {
			return err
		}
		full, inc = nil, nil
		for i := range list.Items {
			b := &list.Items[i]
			if b.Status.JobStatus != obv1.BackupJobCompleted {
				continue
			}
			switch {
			case b.Spec.Type == obv1.BackupFull && (full == nil || b.Status.CompletedAt.Before(full.Status.CompletedAt)):
				full = b
			case b.Spec.Type == obv1.BackupIncremental:
				inc = b
			}
		}
		if full == nil || inc == nil || !full.Status.CompletedAt.Before(inc.Status.CompletedAt) {
			return fmt.Errorf("full %v, incremental %v", full != nil, inc != nil)
		}
		return nil
	})
	t.Logf("Full backup set %d, then incremental set %d, %s after the policy; %d rows written so far",
		full.Status.BackupSetID, inc.Status.BackupSetID, time.Since(start).Round(time.Second), len(o.writer.acked()))
	// Each backup ran once: OceanBase has as many jobs as OBTenantBackups
	// with one, each with its own.
	var list obv1.OBTenantBackupList
	if err := o.c.List(context.Background(), &list, client.InNamespace(o.ns)); err != nil {
		fatalNow(t, err)
	}
	jobs := map[int64]string{}
	for _, b := range list.Items {
		if id := b.Status.JobID; id != 0 {
			if other, dup := jobs[id]; dup {
				errorf(t, "OBTenantBackups %s and %s both report job %d", other, b.Name, id)
			}
			jobs[id] = b.Name
		}
	}
	id := o.tenantIs(obTenant, obv1.TenantRolePrimary, time.Minute).Status.TenantID
	var inOceanBase int
	for _, view := range []string{"CDB_OB_BACKUP_JOBS", "CDB_OB_BACKUP_JOB_HISTORY"} {
		rows := o.query(fmt.Sprintf("SELECT COUNT(*) FROM oceanbase.%s WHERE TENANT_ID = %d", view, id))
		if n, err := strconv.Atoi(rows[0][0]); err == nil {
			inOceanBase += n
		}
	}
	// A backup created after the list may have started meanwhile.
	if inOceanBase < len(jobs) || inOceanBase > len(jobs)+1 {
		errorf(t, "OceanBase ran %d backup jobs for %d OBTenantBackups with a job", inOceanBase, len(jobs))
	}
	objects, err := store.ListPrefix(context.Background(), o.ns+"/", s3.ListOptions{})
	if err != nil || len(objects.Objects) == 0 {
		errorf(t, "the bucket holds nothing under %s/: %v", o.ns, err)
	} else {
		t.Logf("s3://%s/%s/ holds %d objects, for example %s", obBucket, o.ns, len(objects.Objects), objects.Objects[0].Key)
	}
}

// restored restores t1 into t2 (kubectl steward restore) until a time
// between two writes made after the incremental backup, with OceanBase's restore slowed to 20 s and the
// manager killed while it runs.
func (o *obDataScenario) restored(t *testing.T) {
	// A gap between two writes, well after the backups began.
	time.Sleep(3 * time.Second)
	before, maybe, point := o.writer.gap()
	// OceanBase's own checkpoint: the policy's status shows it coarsely.
	id := o.tenantIs(obTenant, obv1.TenantRolePrimary, time.Minute).Status.TenantID
	eventually(t, 2*time.Minute, "the archive passes the restore point", func(context.Context) error {
		rows, err := o.sqlAs("root", o.rootPassword, fmt.Sprintf("SELECT CHECKPOINT_SCN FROM oceanbase.CDB_OB_ARCHIVELOG WHERE TENANT_ID = %d ORDER BY ROUND_ID DESC LIMIT 1", id))
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return fmt.Errorf("CDB_OB_ARCHIVELOG: %v", rows)
		}
		scn, err := strconv.ParseInt(rows[0][0], 10, 64)
		if err != nil {
			return fmt.Errorf("checkpoint SCN %q: %w", rows[0][0], err)
		}
		if !time.Unix(0, scn).After(point.Add(time.Second)) {
			return fmt.Errorf("checkpoint SCN %d", scn)
		}
		return nil
	})
	o.knobs(`{"restoreDelay":"20s"}`)
	defer o.knobs(`{"restoreDelay":"2s"}`)
	// As a user would: the plugin makes the new OBTenant of t1's shape,
	// from t1's policy's destinations, with t1's root password Secret.
	start := time.Now()
	t.Logf("kubectl steward restore: %s", strings.TrimSpace(kubectlSteward(t, o.ns,
		"restore", "obtenant/"+obTenant, "--to", obRestored, "--until-time", point.Format(time.RFC3339Nano))))
	tn := &obv1.OBTenant{}
	if err := o.c.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: obRestored}, tn); err != nil {
		fatalNow(t, err)
	}
	if src := tn.Spec.Source; tn.Spec.RootPassword != obPrimaryPW || src == nil || src.Restore == nil ||
		!equality.Semantic.DeepEqual(src.Restore.Data, o.destination("data")) || !equality.Semantic.DeepEqual(src.Restore.Archive, o.destination("archive")) {
		errorf(t, "kubectl steward restore made %s with root password %s and source %+v", obRestored, tn.Spec.RootPassword, tn.Spec.Source)
	}
	eventually(t, 2*time.Minute, "OceanBase restores", func(ctx context.Context) error {
		r := &obv1.OBTenantRestore{}
		if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obRestored}, r); err != nil {
			return err
		}
		if r.Status.JobID == 0 || r.Status.JobStatus == obv1.RestoreSucceeded {
			return fmt.Errorf("job %d %s", r.Status.JobID, r.Status.JobStatus)
		}
		return nil
	})
	t.Logf("Killed the manager %s while OceanBase restores", killLeader(t))
	o.tenantIs(obRestored, obv1.TenantRolePrimary, 3*time.Minute)
	t.Logf("Restored and activated %s after the OBTenant's creation", time.Since(start).Round(time.Second))
	o.rowsAre(obName, obRestored, before, maybe, time.Minute)
	rows := o.query(fmt.Sprintf("SELECT COUNT(*) FROM oceanbase.CDB_OB_RESTORE_HISTORY WHERE RESTORE_TENANT_NAME = '%s'", obRestored))
	if len(rows) != 1 || rows[0][0] != "1" {
		errorf(t, "CDB_OB_RESTORE_HISTORY holds %v restores of %s, want 1", rows, obRestored)
	}
	r := &obv1.OBTenantRestore{}
	if err := o.c.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: obRestored}, r); err != nil {
		fatalNow(t, err)
	}
	t.Logf("%s holds rows %s, committed before %s; restored to SCN %d from %s",
		obRestored, short(before), point.Format(time.RFC3339Nano), r.Status.RestoreSCN, r.Status.BackupSets)
	if out, err := kubectl("get", "obtr", "-n", o.ns); err == nil {
		t.Logf("kubectl get obtr:\n%s", out)
	}
}

// switchover makes t3, on a second cluster, a standby of t1; stops the
// writer; switches them over, the manager killed once the operation
// started; the new primary holds every row and takes a write, which the
// old one replays.
func (o *obDataScenario) switchover(t *testing.T) {
	o.cluster(obDR)
	eventually(t, 3*time.Minute, "OBCluster "+obDR+" is Ready", func(ctx context.Context) error {
		ob := &obv1.OBCluster{}
		if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obDR}, ob); err != nil {
			return err
		}
		return settled(ob.Generation, &ob.Status.StatusCore)
	})
	tn := tenantSpec(o.ns, obStandby, obDR)
	tn.Spec.RootPassword = obPrimaryPW
	tn.Spec.Source = &obv1.OBTenantSource{Primary: &obv1.OBTenantPrimarySource{Tenant: obTenant}}
	if err := o.c.Create(context.Background(), tn); err != nil {
		fatalNow(t, err)
	}
	o.tenantIs(obStandby, obv1.TenantRoleStandby, 2*time.Minute)
	o.writer.stop()
	// What the primary holds now, writes whose answer was lost included,
	// is what no switchover may lose.
	written, err := o.rowsOf(obName, obTenant)
	if err != nil {
		fatalNow(t, err)
	}
	if lost := o.writer.lost(); len(lost) > 0 {
		t.Logf("Writes whose answer was lost (committed or not): %v", lost)
	}
	o.writer = nil
	o.rowsAre(obDR, obStandby, written, nil, time.Minute)
	t.Logf("The standby replayed all %d rows", len(written))

	op := &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Name: "switchover", Namespace: o.ns},
		Spec: obv1.OBTenantOperationSpec{Type: obv1.OperationSwitchover, Switchover: &obv1.SwitchoverSpec{Primary: obTenant, Standby: obStandby}}}
	if err := o.c.Create(context.Background(), op); err != nil {
		fatalNow(t, err)
	}
	eventually(t, time.Minute, "the switchover starts", func(ctx context.Context) error {
		if err := o.c.Get(ctx, client.ObjectKeyFromObject(op), op); err != nil {
			return err
		}
		if op.Status.Operation == nil {
			return fmt.Errorf("not started")
		}
		return nil
	})
	t.Logf("Killed the manager %s during the switchover (step %s)", killLeader(t), op.Status.Operation.Step)
	o.operationDone(op.Name)
	o.tenantIs(obStandby, obv1.TenantRolePrimary, time.Minute)
	o.tenantIs(obTenant, obv1.TenantRoleStandby, time.Minute)
	o.rowsAre(obDR, obStandby, written, nil, 30*time.Second)
	next := written[len(written)-1] + 1
	o.via = obDR
	if _, err := o.sqlAs("root@"+obStandby, o.secret(obPrimaryPW), fmt.Sprintf("INSERT INTO app.t VALUES (%d)", next)); err != nil {
		fatalf(t, "the new primary refused a write: %v", err)
	}
	o.via = ""
	o.rowsAre(obName, obTenant, append(slices.Clone(written), next), nil, time.Minute)
	if _, err := o.sqlAs("root@"+obTenant, o.secret(obPrimaryPW), "INSERT INTO app.t VALUES (999999)"); err == nil {
		errorf(t, "the old primary took a write after the switchover")
	}
	out, _ := kubectl("get", "obtenant,obtop", "-n", o.ns)
	t.Logf("kubectl get obtenant,obtop:\n%s", out)
}

// operationDone waits for the OBTenantOperation name to succeed.
func (o *obDataScenario) operationDone(name string) {
	o.t.Helper()
	eventually(o.t, 2*time.Minute, "OBTenantOperation "+name+" succeeded", func(ctx context.Context) error {
		op := &obv1.OBTenantOperation{}
		if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: name}, op); err != nil {
			return err
		}
		r := meta.FindStatusCondition(op.Status.Conditions, "Ready")
		if r == nil || r.Status != metav1.ConditionTrue || op.Status.CompletedAt == nil {
			return fmt.Errorf("ready %+v, operation %+v", r, op.Status.Operation)
		}
		return nil
	})
}

// password changes the new primary's root password; its OBTenant's
// Secret holds it after, and the old one is refused.
func (o *obDataScenario) password(t *testing.T) {
	old := o.secret(obPrimaryPW)
	if out, err := kubectl("create", "secret", "generic", "new-root", "-n", o.ns, "--from-literal=password=N3w-"+strconv.FormatInt(time.Now().Unix(), 36)); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	op := &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Name: "password", Namespace: o.ns},
		Spec: obv1.OBTenantOperationSpec{Type: obv1.OperationChangePassword, ChangePassword: &obv1.ChangePasswordSpec{Tenant: obStandby, Secret: "new-root"}}}
	if err := o.c.Create(context.Background(), op); err != nil {
		fatalNow(t, err)
	}
	o.operationDone(op.Name)
	pw := o.secret(obPrimaryPW)
	if pw != o.secret("new-root") {
		errorf(t, "the OBTenant's Secret does not hold the new password")
	}
	o.via = obDR
	defer func() { o.via = "" }()
	if _, err := o.sqlAs("root@"+obStandby, pw, "SELECT 1"); err != nil {
		errorf(t, "the new password is refused: %v", err)
	}
	if _, err := o.sqlAs("root@"+obStandby, old, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		errorf(t, "the old password: %v, want Access denied", err)
	}
}

// failover deletes the primary's cluster and fails the standby over: it
// is a PRIMARY with every row, and takes a write.
func (o *obDataScenario) failover(t *testing.T) {
	written, err := o.rowsOf(obName, obTenant)
	if err != nil {
		fatalNow(t, err)
	}
	if err := o.c.Delete(context.Background(), &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Name: obDR, Namespace: o.ns}}); err != nil {
		fatalNow(t, err)
	}
	// Its reclaimPolicy is Delete: the observers' volume claims go too.
	eventually(t, 2*time.Minute, "OBCluster "+obDR+"'s observers and volume claims are gone", func(ctx context.Context) error {
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + obDR}
		pods, err := env.client.CoreV1().Pods(o.ns).List(ctx, sel)
		if err != nil {
			return err
		}
		claims, err := env.client.CoreV1().PersistentVolumeClaims(o.ns).List(ctx, sel)
		if err != nil {
			return err
		}
		if len(pods.Items)+len(claims.Items) > 0 {
			return fmt.Errorf("%d pods, %d volume claims", len(pods.Items), len(claims.Items))
		}
		return nil
	})
	op := &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Name: "failover", Namespace: o.ns},
		Spec: obv1.OBTenantOperationSpec{Type: obv1.OperationFailover, Failover: &obv1.FailoverSpec{Standby: obTenant}}}
	start := time.Now()
	if err := o.c.Create(context.Background(), op); err != nil {
		fatalNow(t, err)
	}
	o.operationDone(op.Name)
	o.tenantIs(obTenant, obv1.TenantRolePrimary, time.Minute)
	t.Logf("Failed over in %s", time.Since(start).Round(time.Second))
	o.rowsAre(obName, obTenant, written, nil, 30*time.Second)
	if _, err := o.sqlAs("root@"+obTenant, o.secret(obPrimaryPW), "INSERT INTO app.t VALUES (1000000)"); err != nil {
		errorf(t, "the failed-over tenant refused a write: %v", err)
	}
}

// startWriter inserts a row into t1's app.t every 700 ms, as t1's root.
func (o *obDataScenario) startWriter() *rowWriter {
	password := o.secret(obPrimaryPW)
	return startRowWriter(700*time.Millisecond, func(id int) error {
		_, err := o.sqlAs("root@"+obTenant, password, fmt.Sprintf("INSERT INTO app.t VALUES (%d)", id))
		return err
	})
}
