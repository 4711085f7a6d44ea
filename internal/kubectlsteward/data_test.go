package kubectlsteward_test

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestBackupAndRestore runs backup and restore against a real API server
// (the CRDs' own validation included): an OceanBase backup goes where the
// tenant's policy says, encrypted as the policy's are; a restore makes a
// new tenant of the source's shape from the policy's destinations, with
// the source's root password Secret; a MatrixOne backup goes to the named
// claim or to the destination of the cluster's one schedule. Each refusal
// says what to do instead.
func TestBackupAndRestore(t *testing.T) {
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "data-")
	kc := kubeconfig(t, cfg)
	run := func(args ...string) string {
		t.Helper()
		out, err := plugin(t, kc, ns, args...)
		if err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		return out
	}
	refused := func(says string, args ...string) {
		t.Helper()
		if out, err := plugin(t, kc, ns, args...); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%v: %v (%s), want an error saying %q", args, err, out, says)
		}
	}

	t1 := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}, {Name: "z2"}}, PrimaryZone: "z1;z2",
		Unit:      obv1.OBUnitConfig{MaxCPU: resource.MustParse("2"), MemorySize: resource.MustParse("6Gi")},
		Variables: []obv1.TenantVariable{{Name: "ob_query_timeout", Value: "20000000"}},
	}}
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zk1"}, Spec: zkv1.ZookeeperClusterSpec{Replicas: 1}}
	create(t, c, t1, zk)
	refused("tenant t1 has no OBTenantBackupPolicy", "backup", "obtenant/t1")
	refused("tenant t1 has no OBTenantBackupPolicy", "restore", "obt/t1", "--to", "t2")

	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:  "t1",
		Archive: obv1.LogArchiveSpec{Destination: obv1.BackupDestination{Path: "file:///backup/archive"}},
		DataBackup: obv1.DataBackupSpec{Destination: obv1.BackupDestination{Path: "file:///backup/data"}, FullSchedule: "@daily",
			EncryptionSecret: "t1-backup-key"},
	}}
	create(t, c, policy)

	out := run("backup", "obtenant/t1")
	mustContain(t, "backup obtenant/t1", out, "a Full backup of tenant t1 to file:///backup/data, encrypted with the password in Secret t1-backup-key",
		"kubectl steward status obtenantbackup/t1-")
	name := regexp.MustCompile(`obtenantbackup/(t1-\d{14}) created`).FindStringSubmatch(out)
	if name == nil {
		t.Fatalf("backup obtenant/t1 named no backup t1-<UTC time>:\n%s", out)
	}
	full := &obv1.OBTenantBackup{}
	get(t, c, ns, name[1], full)
	if want := (obv1.OBTenantBackupSpec{Tenant: "t1", Type: obv1.BackupFull, EncryptionSecret: "t1-backup-key"}); full.Spec != want {
		t.Errorf("the backup's spec is %+v, want %+v", full.Spec, want)
	}
	run("backup", "obt", "t1", "--name", "t1-inc", "--incremental", "--plus-archivelog", "--encryption-secret", "other-key")
	inc := &obv1.OBTenantBackup{}
	get(t, c, ns, "t1-inc", inc)
	if want := (obv1.OBTenantBackupSpec{Tenant: "t1", Type: obv1.BackupIncremental, PlusArchivelog: true, EncryptionSecret: "other-key"}); inc.Spec != want {
		t.Errorf("the incremental backup's spec is %+v, want %+v", inc.Spec, want)
	}

	out = run("restore", "obtenant/t1", "--to", "t1-dr", "--cluster", "ob-dr", "--until-scn", "1700000000000000000", "--replay-archive")
	mustContain(t, "restore", out, "obtenant/t1-dr created: a restore of the backups of tenant t1 on cluster ob-dr, as a standby")
	dr := &obv1.OBTenant{}
	get(t, c, ns, "t1-dr", dr)
	get(t, c, ns, "t1", t1) // with the CRD's defaults, as the restore read it
	want := obv1.OBTenantSpec{Cluster: "ob-dr", Unit: t1.Spec.Unit, UnitNum: 1, Zones: t1.Spec.Zones, PrimaryZone: "z1;z2",
		Charset: t1.Spec.Charset, ConnectWhiteList: t1.Spec.ConnectWhiteList, Variables: t1.Spec.Variables, RootPassword: "t1-root", ReclaimPolicy: "Retain",
		Source: &obv1.OBTenantSource{Restore: &obv1.OBTenantRestoreSource{
			Data: policy.Spec.DataBackup.Destination, Archive: policy.Spec.Archive.Destination,
			Until: &obv1.RestorePoint{SCN: 1700000000000000000}, Role: obv1.RestoreAsStandby,
			DecryptionSecret: "t1-backup-key", ReplayArchive: true,
		}}}
	if !equality.Semantic.DeepEqual(dr.Spec, want) {
		t.Errorf("the restored tenant's spec is\n%+v\nwant\n%+v", dr.Spec, want)
	}
	refused("name the new tenant with --to NAME", "restore", "obtenant/t1")
	refused("name one restore point", "restore", "obtenant/t1", "--to", "x", "--until-scn", "1", "--until-time", "2026-11-29T06:00:00Z")
	refused(`"t1-dr" already exists`, "restore", "obtenant/t1", "--to", "t1-dr")
	refused("kubectl steward restore takes an OBTenant", "restore", "zk/zk1", "--to", "zk2")
	refused("ZooKeeper and GPSS have no backups yet", "backup", "zk/zk1")

	// MatrixOne: to a claim, or to a schedule's destination.
	mo := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo1"}, Spec: mov1.MatrixOneClusterSpec{
		SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: "shared"}},
		CNGroups:      []mov1.CNGroupSpec{{Name: "tp", Replicas: ptr.To[int32](1)}},
	}}
	create(t, c, mo)
	refused("cluster mo1 has no BackupSchedule with a destination: name one with --volume-claim CLAIM", "backup", "mo/mo1")
	run("backup", "mo/mo1", "--name", "to-claim", "--volume-claim", "backups")
	job := &mov1.BackupJob{}
	get(t, c, ns, "to-claim", job)
	if job.Spec.Cluster != "mo1" || job.Spec.Destination.VolumeClaim == nil || job.Spec.Destination.VolumeClaim.ClaimName != "backups" {
		t.Errorf("the job to a claim has spec %+v", job.Spec)
	}
	schedule := func(name, prefix string) *mov1.BackupSchedule {
		return &mov1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.BackupScheduleSpec{
			Schedule: "@daily", Cluster: "mo1", Retention: mov1.BackupRetention{Count: ptr.To[int32](3)},
			Destination: &mov1.BackupDestination{S3: &mov1.S3Storage{Endpoint: "http://127.0.0.1:9000", Bucket: "backups", KeyPrefix: prefix, CredentialsSecret: "s3-keys", Region: "us-east-1"}},
		}}
	}
	nightly := schedule("nightly", "nightly")
	create(t, c, nightly)
	out = run("backup", "mo/mo1", "--name", "like-nightly")
	mustContain(t, "backup mo/mo1", out, "backupjob/like-nightly created: a backup of cluster mo1 to the destination of BackupSchedule nightly")
	get(t, c, ns, "like-nightly", job)
	if !equality.Semantic.DeepEqual(job.Spec.Destination, *nightly.Spec.Destination) {
		t.Errorf("the job's destination is %+v, want the schedule's %+v", job.Spec.Destination, nightly.Spec.Destination)
	}
	create(t, c, schedule("weekly", "weekly"))
	refused("cluster mo1 has BackupSchedules nightly, weekly: choose one with --schedule NAME", "backup", "mo/mo1")
	run("backup", "mo/mo1", "--name", "like-weekly", "--schedule", "weekly")
	get(t, c, ns, "like-weekly", job)
	if job.Spec.Destination.S3 == nil || job.Spec.Destination.S3.KeyPrefix != "weekly" {
		t.Errorf("the job --schedule weekly names has destination %+v", job.Spec.Destination)
	}
	refused("no BackupSchedule monthly of cluster mo1", "backup", "mo/mo1", "--schedule", "monthly")
	refused("name one destination", "backup", "mo/mo1", "--schedule", "weekly", "--volume-claim", "x")
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, c client.Client, ns, name string, obj client.Object) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}
