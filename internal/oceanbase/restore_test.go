package oceanbase_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
	"github.com/stewardhq/steward/internal/testenv"
)

// backedUpTenant creates the OBTenant t1 (tenant "orders") with a table
// app.t, and a policy archiving it to dir with a full backup every few
// seconds; it returns a login as root@orders once a full backup of the
// rows 1 and 2 completed, with the archive running and no more backups
// scheduled. change, if any, changes the policy before it is created.
func backedUpTenant(t *testing.T, c client.Client, p *player, ns, dir string, change ...func(*obv1.OBTenantBackupPolicy)) *sql.DB {
	t.Helper()
	createTenant(t, c, ns, "orders")
	testenv.Eventually(t, "the tenant is created", tenantReady(c, ns, "t1", func(*obv1.OBTenant) string { return "" }))
	root := login(t, c, p, get(t, c, ns, "ob"), "root", "orders", "t1-root")
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2)"} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:     "t1",
		Archive:    obv1.LogArchiveSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "archive")}},
		DataBackup: obv1.DataBackupSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "data")}, FullSchedule: "@every 5s"},
	}}
	for _, f := range change {
		f(policy)
	}
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a full backup completed", func() (bool, string) {
		full := completedBackups(t, c, ns)[obv1.BackupFull]
		return len(full) > 0, fmt.Sprintf("%d full backups", len(full))
	})
	// No more backups; the archive goes on.
	testenv.Update(t, c, policy, func(p *obv1.OBTenantBackupPolicy) { p.Spec.DataBackup.FullSchedule = "@yearly" })
	return root
}

// restoredTenant is an OBTenant t restored into tenantName from the
// backups in dir, with the root password Secret of t1.
func restoredTenant(t *testing.T, c client.Client, ns, name, tenantName, dir string, until *obv1.RestorePoint, role string) *obv1.OBTenant {
	t.Helper()
	src := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t1-root"}, src); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-root"}, Data: src.Data}
	if err := client.IgnoreAlreadyExists(c.Create(t.Context(), secret)); err != nil {
		t.Fatal(err)
	}
	return &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", TenantName: tenantName, Zones: []obv1.OBTenantZone{{Name: "z1"}},
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
		Source: &obv1.OBTenantSource{Restore: &obv1.OBTenantRestoreSource{
			Data:    obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "data")},
			Archive: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "archive")},
			Until:   until, Role: role,
		}},
	}}
}

// rows returns app.t's ids, in order, through db.
func rows(db *sql.DB) (string, error) {
	var got sql.NullString
	err := db.QueryRow("SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t").Scan(&got)
	return got.String, err
}

// TestRestore: a tenant is written to between backups and archived; an
// OBTenant restored until a time between two writes holds exactly the
// rows committed before it, is activated (PRIMARY) and takes writes; one
// restored as a Standby to the archive's end holds every row and stays a
// read-only STANDBY. An OBTenant whose tenant exists is not restored over
// (TenantExists). Admission refuses a restore without its root password
// Secret, with a point that does not parse, and with the data inside the
// archive, and an OBTenantRestore of no OBTenant or of one not to be
// restored.
func TestRestore(t *testing.T) {
	c, ns, p := setup(t, 89)
	dir := p.tempDir()
	root := backedUpTenant(t, c, p, ns, dir)
	if _, err := root.Exec("INSERT INTO app.t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	point := time.Now().UTC()
	time.Sleep(200 * time.Millisecond)
	if _, err := root.Exec("INSERT INTO app.t VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	op := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	t1 := &obv1.OBTenant{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t1"}, t1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the archive holds the fourth row", func() (bool, string) {
		var checkpoint int64
		err := op.QueryRow("SELECT CHECKPOINT_SCN FROM oceanbase.CDB_OB_ARCHIVELOG WHERE TENANT_ID = ? ORDER BY ROUND_ID DESC LIMIT 1", t1.Status.TenantID).Scan(&checkpoint)
		return err == nil && checkpoint > time.Now().Add(-100*time.Millisecond).UnixNano(), fmt.Sprint(checkpoint, err)
	})

	// Admission (ob-operator #650 and #651 fixed its restore validation).
	tc := oceanbase.NewTenantController(oceanbase.Options{})
	admit := func(tn *obv1.OBTenant) error {
		tn = tn.DeepCopy()
		obv1.DefaultTenant(tn)
		if err := tc.Validate(tn); err != nil {
			return err
		}
		return tc.Admit(t.Context(), c, tn)
	}
	good := restoredTenant(t, c, ns, "t2", "restored", dir, &obv1.RestorePoint{Time: point.Format(time.RFC3339Nano)}, "")
	for _, bad := range []struct {
		name, field string
		change      func(*obv1.OBTenant)
	}{
		{"no root password Secret", "spec.rootPassword", func(tn *obv1.OBTenant) { tn.Spec.RootPassword = "nope" }},
		{"a point that does not parse", "spec.source.restore.until.time", func(tn *obv1.OBTenant) { tn.Spec.Source.Restore.Until.Time = "yesterday" }},
		{"the data inside the archive", "spec.source.restore.data.path", func(tn *obv1.OBTenant) {
			tn.Spec.Source.Restore.Data.Path = tn.Spec.Source.Restore.Archive.Path + "/data"
		}},
	} {
		tn := good.DeepCopy()
		bad.change(tn)
		if err := admit(tn); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("%s: %v", bad.name, err)
		}
	}
	if err := admit(good); err != nil {
		t.Fatalf("a valid restore: %v", err)
	}
	rc := oceanbase.NewTenantRestoreController(oceanbase.Options{})
	orphan := &obv1.OBTenantRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}, Spec: obv1.OBTenantRestoreSpec{Tenant: "nope", Source: *good.Spec.Source.Restore}}
	if err := rc.Admit(t.Context(), c, orphan); err == nil || !strings.Contains(err.Error(), "spec.tenant") {
		t.Errorf("an OBTenantRestore of no OBTenant: %v", err)
	}
	orphan.Spec.Tenant = "t1"
	if err := rc.Admit(t.Context(), c, orphan); err == nil || !strings.Contains(err.Error(), "no spec.source.restore") {
		t.Errorf("an OBTenantRestore of an OBTenant not to be restored: %v", err)
	}

	// Restored to the point: rows 1 to 3, then a primary that takes writes
	// (ob-operator #89: a restore with an until point failed, the point
	// sent under a wrong name).
	if err := c.Create(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "t2 is restored and activated", tenantReady(c, ns, "t2", func(tn *obv1.OBTenant) string {
		if tn.Status.TenantRole != obv1.TenantRolePrimary {
			return "role " + tn.Status.TenantRole
		}
		return ""
	}))
	restore := &obv1.OBTenantRestore{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t2"}, restore); err != nil {
		t.Fatal(err)
	}
	s := restore.Status
	if !framework.IsConditionTrue(s.Conditions, framework.ConditionReady) || s.JobStatus != obv1.RestoreSucceeded ||
		s.RestoreSCN != point.UnixNano() || s.BackupTenant != "orders" || s.BackupSets == "" || s.FinishedAt == nil ||
		!metav1.IsControlledBy(restore, good) && restore.OwnerReferences[0].Name != "t2" {
		t.Errorf("the restore's status: %+v", s)
	}
	restored := login(t, c, p, get(t, c, ns, "ob"), "root", "restored", "t2-root")
	if got, err := rows(restored); got != "1,2,3" || err != nil {
		t.Errorf("the tenant restored until between the third and the fourth row holds %q (%v), want 1,2,3", got, err)
	}
	if _, err := restored.Exec("INSERT INTO app.t VALUES (5)"); err != nil {
		t.Errorf("the activated tenant refused a write: %v", err)
	}

	// As a standby, to the end of the archive: every row, read only.
	standby := restoredTenant(t, c, ns, "t3", "replica", dir, nil, obv1.RestoreAsStandby)
	if err := c.Create(t.Context(), standby); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "t3 is restored as a standby", tenantReady(c, ns, "t3", func(tn *obv1.OBTenant) string {
		if tn.Status.TenantRole != obv1.TenantRoleStandby {
			return "role " + tn.Status.TenantRole
		}
		return ""
	}))
	replica := login(t, c, p, get(t, c, ns, "ob"), "root", "replica", "t3-root")
	if got, err := rows(replica); got != "1,2,3,4" || err != nil {
		t.Errorf("the standby restored to the archive's end holds %q (%v), want 1,2,3,4", got, err)
	}
	if _, err := replica.Exec("INSERT INTO app.t VALUES (6)"); err == nil {
		t.Error("the standby took a write")
	}

	// Into a tenant that exists, its OBTenant deleted (Retain keeps the
	// tenant): never restored over.
	if err := c.Delete(t.Context(), t1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "t1 is gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(t1), &obv1.OBTenant{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	exists := restoredTenant(t, c, ns, "t4", "orders", dir, nil, "")
	if err := c.Create(t.Context(), exists); err != nil {
		t.Fatal(err)
	}
	eventually(t, "t4 refuses to restore over orders", func() (bool, string) {
		tn := &obv1.OBTenant{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(exists), tn); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(tn.Status.Conditions, framework.ConditionReady)
		if r == nil {
			return false, "no Ready condition"
		}
		return r.Reason == obv1.ReasonTenantExists, r.String()
	})
	if n := p.statements("ALTER SYSTEM RESTORE"); n != 2 {
		t.Errorf("%d RESTORE statements, want 2", n)
	}
	if got, err := rows(root); got != "1,2,3,4" || err != nil {
		t.Errorf("the tenant a restore was refused into holds %q (%v)", got, err)
	}
}

// TestRestoreAfterManagerRestart: the manager stops while OceanBase
// restores (its job takes 2 s); the next manager finds the job instead
// of starting another, follows it and activates the tenant: one restore
// job, one RESTORE statement.
func TestRestoreAfterManagerRestart(t *testing.T) {
	c, ns, p := setup(t, 90)
	dir := p.tempDir()
	backedUpTenant(t, c, p, ns, dir)
	tn := restoredTenant(t, c, ns, "t2", "restored", dir, nil, "")
	if err := c.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restore statement sent", func() (bool, string) { return p.statements("ALTER SYSTEM RESTORE") > 0, "" })
	p.stopManager()
	p.startManager()
	testenv.Eventually(t, "t2 is restored and activated", tenantReady(c, ns, "t2", func(tn *obv1.OBTenant) string {
		if tn.Status.TenantRole != obv1.TenantRolePrimary {
			return "role " + tn.Status.TenantRole
		}
		return ""
	}))
	op := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	jobs, err := obsql.RestoreJobs(t.Context(), op, "restored")
	if err != nil || len(jobs) != 1 || jobs[0].Status != obv1.RestoreSucceeded {
		t.Errorf("restore jobs %+v (%v), want one that succeeded", jobs, err)
	}
	if n := p.statements("ALTER SYSTEM RESTORE"); n != 1 {
		t.Errorf("%d RESTORE statements, want 1", n)
	}
}

// TestBackupEncryption: a policy with an encryption Secret takes backups
// OceanBase records as PASSWORD_ONLY; a restore without the password fails
// (OceanBase cannot open the set) and says so, and one whose decryption
// Secret holds it restores the rows. The password never reaches a status.
// Admission refuses a policy, a backup and a restored OBTenant naming a
// Secret that does not exist.
func TestBackupEncryption(t *testing.T) {
	c, ns, p := setup(t, 96)
	dir := p.tempDir()
	const password = "K3y-for-backups"
	if err := c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-key"},
		StringData: map[string]string{"password": password}}); err != nil {
		t.Fatal(err)
	}
	backedUpTenant(t, c, p, ns, dir, func(policy *obv1.OBTenantBackupPolicy) {
		policy.Spec.DataBackup.EncryptionSecret = "backup-key"
	})
	for _, b := range completedBackups(t, c, ns)[obv1.BackupFull] {
		if b.Spec.EncryptionSecret != "backup-key" {
			t.Errorf("the scheduled backup %s: encryptionSecret %q, want the policy's", b.Name, b.Spec.EncryptionSecret)
		}
	}
	sys := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	var mode string
	if err := sys.QueryRow("SELECT ENCRYPTION_MODE FROM oceanbase.CDB_OB_BACKUP_JOB_HISTORY WHERE STATUS = 'COMPLETED' ORDER BY JOB_ID LIMIT 1").Scan(&mode); err != nil || mode != "PASSWORD_ONLY" {
		t.Errorf("the backup's encryption mode %q (%v), want PASSWORD_ONLY", mode, err)
	}

	// Without the password: OceanBase's restore fails.
	if err := c.Create(t.Context(), restoredTenant(t, c, ns, "t2", "nokey", dir, nil, "")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the restore without the password fails", func() (bool, string) {
		r := &obv1.OBTenantRestore{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t2"}, r); err != nil {
			return false, err.Error()
		}
		var got string
		if ready := meta.FindStatusCondition(r.Status.Conditions, framework.ConditionReady); ready != nil {
			got = ready.Message
		}
		return r.Status.JobStatus == obv1.RestoreFailed && strings.Contains(got, "is encrypted"), r.Status.JobStatus + ": " + got
	})

	// With it.
	withKey := restoredTenant(t, c, ns, "t3", "withkey", dir, nil, "")
	withKey.Spec.Source.Restore.DecryptionSecret = "backup-key"
	if err := c.Create(t.Context(), withKey); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the restore with the password", roleIs(c, ns, "t3", obv1.TenantRolePrimary))
	rowsAre(t, login(t, c, p, get(t, c, ns, "ob"), "root", "withkey", "t3-root"), "1,2")

	// No status holds the password.
	for _, list := range []client.ObjectList{&obv1.OBTenantBackupList{}, &obv1.OBTenantRestoreList{}, &obv1.OBTenantBackupPolicyList{}} {
		if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(list); strings.Contains(string(b), password) {
			t.Errorf("a %T holds the backup password", list)
		}
	}

	// Admission.
	noSecret := "spec.dataBackup.encryptionSecret"
	pc := oceanbase.NewBackupPolicyController(oceanbase.Options{})
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant: "t1", DataBackup: obv1.DataBackupSpec{EncryptionSecret: "nope"}}}
	if err := pc.Admit(t.Context(), c, policy); err == nil || !strings.Contains(err.Error(), noSecret) {
		t.Errorf("a policy with no encryption Secret: %v", err)
	}
	bc := oceanbase.NewTenantBackupController(oceanbase.Options{})
	backup := &obv1.OBTenantBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}, Spec: obv1.OBTenantBackupSpec{Tenant: "t1", EncryptionSecret: "nope"}}
	if err := bc.Admit(t.Context(), c, backup); err == nil || !strings.Contains(err.Error(), "spec.encryptionSecret") {
		t.Errorf("a backup with no encryption Secret: %v", err)
	}
	tc := oceanbase.NewTenantController(oceanbase.Options{})
	bad := restoredTenant(t, c, ns, "t4", "x", dir, nil, "")
	bad.Spec.Source.Restore.DecryptionSecret = "nope"
	obv1.DefaultTenant(bad)
	if err := tc.Admit(t.Context(), c, bad); err == nil || !strings.Contains(err.Error(), "spec.source.restore.decryptionSecret") {
		t.Errorf("a restore with no decryption Secret: %v", err)
	}
}

// TestRestoredStandbyReplaysArchive: a tenant restored as a Standby with
// replayArchive follows the archive (its LOG_RESTORE_SOURCE a LOCATION):
// a row written to the source tenant after the restore reaches it once
// archived; it refuses writes; a Failover activates it and it takes them.
func TestRestoredStandbyReplaysArchive(t *testing.T) {
	c, ns, p := setup(t, 97)
	dir := p.tempDir()
	root := backedUpTenant(t, c, p, ns, dir)
	follower := restoredTenant(t, c, ns, "t2", "follower", dir, nil, obv1.RestoreAsStandby)
	follower.Spec.Source.Restore.ReplayArchive = true
	if err := c.Create(t.Context(), follower); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the restored standby replays the archive", func() (bool, string) {
		r := &obv1.OBTenantRestore{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t2"}, r); err != nil {
			return false, err.Error()
		}
		return framework.IsConditionTrue(r.Status.Conditions, framework.ConditionReady) && r.Status.ReplayingArchive,
			fmt.Sprintf("%v, replaying %t", r.Status.Conditions, r.Status.ReplayingArchive)
	})
	testenv.Eventually(t, "the OBTenant says STANDBY", roleIs(c, ns, "t2", obv1.TenantRoleStandby))
	standby := login(t, c, p, get(t, c, ns, "ob"), "root", "follower", "t2-root")
	rowsAre(t, standby, "1,2")
	if _, err := root.Exec("INSERT INTO app.t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	rowsAre(t, standby, "1,2,3")
	if _, err := standby.Exec("INSERT INTO app.t VALUES (9)"); err == nil {
		t.Error("the standby took a write")
	}
	sys := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	t2 := &obv1.OBTenant{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "t2"}, t2); err != nil {
		t.Fatal(err)
	}
	var typ, value string
	if err := sys.QueryRow("SELECT TYPE, VALUE FROM oceanbase.CDB_OB_LOG_RESTORE_SOURCE WHERE TENANT_ID = ?", t2.Status.TenantID).Scan(&typ, &value); err != nil ||
		typ != "LOCATION" || value != "LOCATION=file://"+filepath.Join(dir, "archive") {
		t.Errorf("the standby's source: %s %s (%v)", typ, value, err)
	}

	if err := c.Create(t.Context(), &obv1.OBTenantOperation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "activate"},
		Spec: obv1.OBTenantOperationSpec{Type: obv1.OperationFailover, Failover: &obv1.FailoverSpec{Standby: "t2"}}}); err != nil {
		t.Fatal(err)
	}
	operationDone(t, c, ns, "activate")
	if _, err := standby.Exec("INSERT INTO app.t VALUES (4)"); err != nil {
		t.Errorf("the activated tenant refused a write: %v", err)
	}
	rowsAre(t, standby, "1,2,3,4")
}
