package oceanbase_test

import (
	"context"
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
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsim"
	"github.com/stewardhq/steward/internal/testenv"
)

// policyIs waits for the policy's Ready to be status (and observed at its
// generation) and check to pass.
func policyIs(c client.Client, ns, name string, ready bool, check func(*obv1.OBTenantBackupPolicy) string) func() (bool, string) {
	return func() (bool, string) {
		p := &obv1.OBTenantBackupPolicy{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(p.Status.Conditions, framework.ConditionReady)
		running := p.Status.Operation != nil && p.Status.Operation.Phase.Active()
		if r == nil || (r.Status == metav1.ConditionTrue) != ready || r.ObservedGeneration != p.Generation || running {
			return false, fmt.Sprintf("conditions %v, operation %v", p.Status.Conditions, p.Status.Operation)
		}
		if why := check(p); why != "" {
			return false, why
		}
		return true, ""
	}
}

// completedBackups lists the namespace's OBTenantBackups that completed,
// by type.
func completedBackups(t *testing.T, c client.Client, ns string) map[string][]obv1.OBTenantBackup {
	t.Helper()
	var list obv1.OBTenantBackupList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]obv1.OBTenantBackup{}
	for _, b := range list.Items {
		if r := meta.FindStatusCondition(b.Status.Conditions, framework.ConditionReady); r != nil && r.Status == metav1.ConditionTrue {
			out[b.Spec.Type] = append(out[b.Spec.Type], b)
		}
	}
	return out
}

// createTenant creates the OBCluster "ob" of one observer in zone z1 and
// its OBTenant "t1", whose tenant in OceanBase is tenantName ("": t1).
func createTenant(t *testing.T, c client.Client, ns, tenantName string) {
	t.Helper()
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 1}},
	}}
	tn := &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1"}, Spec: obv1.OBTenantSpec{
		Cluster: "ob", Zones: []obv1.OBTenantZone{{Name: "z1"}}, TenantName: tenantName,
		Unit: obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("6Gi")},
	}}
	for _, o := range []client.Object{ob, tn} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBackupPolicy: a policy archives a tenant's log and sets its
// destinations and delete policy; its schedules take full and incremental
// backups (OBTenantBackups) that OceanBase completes, and it keeps
// backupsKept of them; a backup a user creates completes too. Moving the
// archive while it runs stops it, sets the new destination and starts it
// again; suspending defers it; deleting the policy stops it. Admission
// refuses schedules that do not parse, one destination inside the other,
// a missing tenant and a second policy of the tenant.
func TestBackupPolicy(t *testing.T) {
	c, ns, pl := setup(t, 86)
	// The OBTenant's name is not its tenant's (ob-operator #103 and #240
	// looked tenants up by the one name as the other).
	createTenant(t, c, ns, "orders")
	dir := pl.tempDir()
	dest := func(name string) obv1.BackupDestination {
		return obv1.BackupDestination{Path: "file://" + filepath.Join(dir, name)}
	}
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:         "t1",
		Archive:        obv1.LogArchiveSpec{Destination: dest("archive")},
		DataBackup:     obv1.DataBackupSpec{Destination: dest("data"), FullSchedule: "@every 10s", IncrementalSchedule: "@every 3s"},
		RecoveryWindow: "3d",
		BackupsKept:    2,
	}}

	pc := oceanbase.NewBackupPolicyController(oceanbase.Options{})
	admit := func(p *obv1.OBTenantBackupPolicy) error {
		p = p.DeepCopy()
		obv1.DefaultBackupPolicy(p)
		if err := pc.Validate(p); err != nil {
			return err
		}
		if err := pc.Admit(t.Context(), c, p); err != nil {
			return err
		}
		return pc.Clashes(t.Context(), c, p)
	}
	for _, tc := range []struct {
		name, field string
		change      func(*obv1.OBTenantBackupPolicy)
	}{
		{"a schedule that does not parse", "spec.dataBackup.fullSchedule", func(p *obv1.OBTenantBackupPolicy) { p.Spec.DataBackup.FullSchedule = "61 * * * *" }},
		{"the data inside the archive", "spec.dataBackup.destination.path", func(p *obv1.OBTenantBackupPolicy) {
			p.Spec.DataBackup.Destination = obv1.BackupDestination{Path: p.Spec.Archive.Destination.Path + "/data"}
		}},
		{"a missing tenant", "spec.tenant", func(p *obv1.OBTenantBackupPolicy) { p.Spec.Tenant = "nope" }},
	} {
		bad := policy.DeepCopy()
		tc.change(bad)
		if err := admit(bad); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if err := admit(policy); err != nil {
		t.Fatalf("a valid policy: %v", err)
	}

	testenv.Eventually(t, "the tenant is created", tenantReady(c, ns, "t1", func(*obv1.OBTenant) string { return "" }))
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	second := policy.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "t1-more"}
	if err := admit(second); err == nil || !strings.Contains(err.Error(), "spec.tenant") {
		t.Errorf("a second policy of the tenant: %v", err)
	}

	testenv.Eventually(t, "the policy archives, with its destinations and delete policy", policyIs(c, ns, "t1-backups", true, func(p *obv1.OBTenantBackupPolicy) string {
		s := p.Status
		if s.Archive == nil || s.Archive.Status != obv1.ArchiveDoing || s.Archive.CheckpointTime == nil || s.LogMode != "ARCHIVELOG" ||
			s.DataBackupDest != policy.Spec.DataBackup.Destination.Path || s.RecoveryWindow != "3d" || s.NextFullScheduleTime == nil {
			return fmt.Sprintf("%+v", s)
		}
		return ""
	}))
	// An incremental run due while a backup is active is skipped, by
	// design: the full runs are rarer than the incremental ones so that
	// some land between them, and the wait is long, since under the load
	// of every package's tests at once a backup stays active for seconds
	// (CI once saw 2 full, 0 incremental in 20 s with 6 s and 4 s).
	eventually(t, "a full and then an incremental scheduled backup completed", func() (bool, string) {
		done := completedBackups(t, c, ns)
		full, inc := done[obv1.BackupFull], done[obv1.BackupIncremental]
		if len(full) == 0 || len(inc) == 0 {
			return false, fmt.Sprintf("%d full, %d incremental", len(full), len(inc))
		}
		for _, b := range append(full, inc...) {
			if b.Status.BackupSetID == 0 || b.Status.JobID == 0 || b.Status.CompletedAt == nil || b.Labels[build.LabelBackupPolicy] != "t1-backups" {
				return false, fmt.Sprintf("%s: %+v", b.Name, b.Status)
			}
		}
		return true, ""
	})
	testenv.Eventually(t, "the policy keeps 2 finished backups", func() (bool, string) {
		var list obv1.OBTenantBackupList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		finished := 0
		for _, b := range list.Items {
			if b.Status.JobStatus == obv1.BackupJobCompleted && b.DeletionTimestamp == nil {
				finished++
			}
		}
		return finished == 2, fmt.Sprintf("%d finished", finished)
	})

	// Suspended: the archive is deferred and no backup is scheduled; the
	// user's own backup still runs (the archive round is SUSPEND, not
	// stopped, so OceanBase would refuse it: it waits until resumed).
	testenv.Update(t, c, policy, func(p *obv1.OBTenantBackupPolicy) { p.Spec.Suspend = true })
	testenv.Eventually(t, "the policy is suspended", policyIs(c, ns, "t1-backups", true, func(p *obv1.OBTenantBackupPolicy) string {
		if p.Status.Archive == nil || p.Status.Archive.Status != obv1.ArchiveSuspend || p.Status.NextFullScheduleTime != nil {
			return fmt.Sprintf("%+v", p.Status)
		}
		return ""
	}))
	// Suspended, the schedules take nothing (ob-operator #656: pausing is
	// how its users stopped scheduled backups).
	backupNames := func() map[string]bool {
		var list obv1.OBTenantBackupList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, b := range list.Items {
			names[b.Name] = true
		}
		return names
	}
	before := backupNames()
	time.Sleep(7 * time.Second) // past a run of each schedule
	for name := range backupNames() {
		if !before[name] {
			t.Errorf("the OBTenantBackup %s was created while the policy was suspended", name)
		}
	}
	own := &obv1.OBTenantBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}, Spec: obv1.OBTenantBackupSpec{Tenant: "t1", Type: obv1.BackupIncremental}}
	if err := c.Create(t.Context(), own); err != nil {
		t.Fatal(err)
	}
	// It waits for the archive itself, or, when a scheduled backup was
	// created just before the suspension (CI saw one), in the queue
	// behind that one, which waits for the archive: either way it does
	// not start.
	testenv.Eventually(t, "the user's backup waits for the archive", func() (bool, string) {
		b := &obv1.OBTenantBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(own), b); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(b.Status.Conditions, framework.ConditionReady)
		waits := r != nil && (r.Reason == obv1.ReasonArchiveNotRunning || r.Reason == obv1.ReasonBackupQueued)
		return waits && b.Status.JobID == 0, fmt.Sprintf("%v %+v", r, b.Status)
	})

	// Moved while archiving (resumed in the same change): stop, set, start.
	testenv.Update(t, c, policy, func(p *obv1.OBTenantBackupPolicy) {
		p.Spec.Suspend = false
		p.Spec.Archive.Destination = dest("archive2")
	})
	testenv.Eventually(t, "the archive moved", policyIs(c, ns, "t1-backups", true, func(p *obv1.OBTenantBackupPolicy) string {
		if a := p.Status.Archive; a == nil || a.Status != obv1.ArchiveDoing || a.Path != "file://"+filepath.Join(dir, "archive2") || a.RoundID < 2 {
			return fmt.Sprintf("%+v", p.Status.Archive)
		}
		return ""
	}))
	testenv.Eventually(t, "the user's backup completed", func() (bool, string) {
		b := &obv1.OBTenantBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(own), b); err != nil {
			return false, err.Error()
		}
		return b.Status.JobStatus == obv1.BackupJobCompleted && b.Status.BackupSetID > 0, fmt.Sprintf("%+v", b.Status)
	})

	if err := c.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policy is gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(policy), &obv1.OBTenantBackupPolicy{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	op := login(t, c, pl, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	// One BACKUP statement per job (ob-operator #94: status updates
	// triggered passes that could start a job twice).
	var jobs int
	if err := op.QueryRow("SELECT COUNT(*) FROM oceanbase.CDB_OB_BACKUP_JOB_HISTORY").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if sent := pl.statements("BACKUP", "DATABASE"); sent != jobs {
		t.Errorf("%d BACKUP DATABASE statements for %d jobs", sent, jobs)
	}
	t.Logf("%d backup jobs, one statement each", jobs)
	var mode string
	if err := op.QueryRow("SELECT LOG_MODE FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = 'orders'").Scan(&mode); err != nil || mode != "NOARCHIVELOG" {
		t.Errorf("the tenant's log mode after the policy's deletion: %q, %v", mode, err)
	}
}

// TestBackupAfterManagerRestart: the manager stops while a backup's
// statement is on its way (OceanBase takes 3 s to answer it); the next
// manager finds the job that statement started instead of starting a
// second, and follows it to the end: OceanBase ran one backup job.
func TestBackupAfterManagerRestart(t *testing.T) {
	c, ns, p := setup(t, 87)
	createTenant(t, c, ns, "")
	dir := p.tempDir()
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:     "t1",
		Archive:    obv1.LogArchiveSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "archive")}},
		DataBackup: obv1.DataBackupSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "data")}, FullSchedule: "@yearly"},
	}}
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policy archives", policyIs(c, ns, "t1-backups", true, func(*obv1.OBTenantBackupPolicy) string { return "" }))

	p.setFaults(obsim.Fault{Match: `(?i)^alter system backup database`, Delay: obsim.Duration{Duration: 3 * time.Second}})
	b := &obv1.OBTenantBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b1"}, Spec: obv1.OBTenantBackupSpec{Tenant: "t1"}}
	if err := c.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backup statement sent", func() (bool, string) { return p.statements("BACKUP DATABASE") > 0, "" })
	p.stopManager()
	got := &obv1.OBTenantBackup{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.RequestedAt == nil || got.Status.JobID != 0 {
		t.Fatalf("the manager stopped with the backup at %+v", got.Status)
	}
	p.startManager()
	testenv.Eventually(t, "the backup completed", func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
			return false, err.Error()
		}
		return got.Status.JobStatus == obv1.BackupJobCompleted, fmt.Sprintf("%+v", got.Status)
	})
	p.setFaults()
	op := login(t, c, p, get(t, c, ns, "ob"), "operator", "", "ob-operator")
	var jobs int
	if err := op.QueryRow("SELECT COUNT(*) FROM oceanbase.CDB_OB_BACKUP_JOB_HISTORY").Scan(&jobs); err != nil || jobs != 1 {
		t.Errorf("OceanBase ran %d backup jobs (%v), want 1", jobs, err)
	}
	t.Logf("Backup job %d completed set %d; %d BACKUP DATABASE statements were sent", got.Status.JobID, got.Status.BackupSetID,
		p.statements("BACKUP DATABASE"))
}

// TestBackupPolicyWaitsForCredentials: a policy whose S3 Secret is missing,
// then holds a key OceanBase could not read from a destination's query,
// is not Ready (CredentialsMissing, saying which Secret) and sets nothing;
// once the Secret is right it goes on, with no change to its spec.
func TestBackupPolicyWaitsForCredentials(t *testing.T) {
	c, ns, p := setup(t, 88)
	createTenant(t, c, ns, "")
	s3 := func(path string) obv1.BackupDestination {
		return obv1.BackupDestination{Path: path, S3: &obv1.BackupS3{Endpoint: "127.0.88.200:7070", Region: "us-east-1", PathStyle: true, CredentialsSecret: "s3-keys"}}
	}
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:     "t1",
		Archive:    obv1.LogArchiveSpec{Destination: s3("s3://ob-backups/t1/archive")},
		DataBackup: obv1.DataBackupSpec{Destination: s3("s3://ob-backups/t1/data"), FullSchedule: "@yearly"},
	}}
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	// waitReady waits for the policy's Ready condition to pass ok.
	waitReady := func(what string, ok func(r *metav1.Condition) bool) {
		t.Helper()
		testenv.Eventually(t, what, func() (bool, string) {
			p := &obv1.OBTenantBackupPolicy{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(policy), p); err != nil {
				return false, err.Error()
			}
			r := meta.FindStatusCondition(p.Status.Conditions, framework.ConditionReady)
			return r != nil && ok(r), fmt.Sprint(p.Status.Conditions)
		})
	}
	missing := func(says string) func(r *metav1.Condition) bool {
		return func(r *metav1.Condition) bool {
			return r.Reason == obv1.ReasonCredentialsMissing && strings.Contains(r.Message, says)
		}
	}
	waitReady("CredentialsMissing: no Secret", missing(`Secret s3-keys`))
	// A policy that never got its destinations set is deleted at once
	// (ob-operator #238: such a policy could not be deleted).
	if err := c.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policy that set nothing gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(policy), &obv1.OBTenantBackupPolicy{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	policy.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: policy.Name}
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	waitReady("CredentialsMissing again", missing(`Secret s3-keys`))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-keys"},
		StringData: map[string]string{build.S3AccessKeyIDKey: "AKID", build.S3SecretAccessKeyKey: "a&b"}}
	if err := c.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	waitReady("CredentialsMissing: a key with '&'", missing("no '&'"))
	// OceanBase refuses the destination (ob-operator #742: an IO error the
	// policy did not show): Synced says so, with OceanBase's error.
	p.setFaults(obsim.Fault{Match: `(?i)set log_archive_dest =`, Error: "injected: IO error"})
	testenv.Update(t, c, secret, func(s *corev1.Secret) { s.StringData = map[string]string{build.S3SecretAccessKeyKey: "secret"} })
	waitReady("past the credentials, with no change to the spec", func(r *metav1.Condition) bool {
		return r.Reason != obv1.ReasonCredentialsMissing
	})
	testenv.Eventually(t, "Synced shows OceanBase's refusal", func() (bool, string) {
		got := &obv1.OBTenantBackupPolicy{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(policy), got); err != nil {
			return false, err.Error()
		}
		s := meta.FindStatusCondition(got.Status.Conditions, framework.ConditionSynced)
		return s != nil && s.Status == metav1.ConditionFalse && strings.Contains(s.Message, "injected: IO error"), s.String()
	})
	p.setFaults()
	// Failed passes back off (controller-runtime's limiter, to minutes);
	// an edit of the spec, as a user's, starts one at once.
	testenv.Update(t, c, policy, func(p *obv1.OBTenantBackupPolicy) { p.Spec.RecoveryWindow = "8d" })
	waitReady("the archive destination set once OceanBase takes it", func(r *metav1.Condition) bool {
		return r.Reason != obv1.ReasonDestinationChanging || !strings.Contains(r.Message, "archive destination")
	})
}

// TestBackupPlusArchivelogAndCancel: a backup with plusArchivelog is
// taken with PLUS ARCHIVELOG; a backup canceled while OceanBase runs its
// job cancels it (CANCELED, BackupCanceled), and the next backup runs; one
// canceled while it waits behind another never starts.
func TestBackupPlusArchivelogAndCancel(t *testing.T) {
	c, ns, p := setup(t, 92)
	createTenant(t, c, ns, "")
	dir := p.tempDir()
	policy := &obv1.OBTenantBackupPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t1-backups"}, Spec: obv1.OBTenantBackupPolicySpec{
		Tenant:     "t1",
		Archive:    obv1.LogArchiveSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "archive")}},
		DataBackup: obv1.DataBackupSpec{Destination: obv1.BackupDestination{Path: "file://" + filepath.Join(dir, "data")}, FullSchedule: "@yearly"},
	}}
	if err := c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policy archives", policyIs(c, ns, "t1-backups", true, func(*obv1.OBTenantBackupPolicy) string { return "" }))
	backup := func(name string, plus bool) *obv1.OBTenantBackup {
		b := &obv1.OBTenantBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: obv1.OBTenantBackupSpec{Tenant: "t1", PlusArchivelog: plus}}
		if err := c.Create(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	status := func(b *obv1.OBTenantBackup, what string, check func(*obv1.OBTenantBackup) bool) {
		t.Helper()
		testenv.Eventually(t, b.Name+" "+what, func() (bool, string) {
			got := &obv1.OBTenantBackup{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
				return false, err.Error()
			}
			return check(got), fmt.Sprintf("%+v", got.Status)
		})
	}
	readyReason := func(b *obv1.OBTenantBackup) string {
		r := meta.FindStatusCondition(b.Status.Conditions, framework.ConditionReady)
		if r == nil {
			return ""
		}
		return r.Reason
	}

	plus := backup("plus", true)
	status(plus, "completed", func(b *obv1.OBTenantBackup) bool { return b.Status.JobStatus == obv1.BackupJobCompleted })
	if n := p.statements("BACKUP DATABASE PLUS ARCHIVELOG"); n != 1 {
		t.Errorf("%d BACKUP DATABASE PLUS ARCHIVELOG statements, want 1", n)
	}

	p.setKnobs(func(k *obsim.Knobs) { k.BackupDelay = obsim.Duration{Duration: time.Minute} })
	slow := backup("slow", false)
	status(slow, "running", func(b *obv1.OBTenantBackup) bool { return b.Status.JobStatus == obv1.BackupJobDoing })
	queued := backup("queued", false)
	status(queued, "queued", func(b *obv1.OBTenantBackup) bool { return readyReason(b) == obv1.ReasonBackupQueued })
	testenv.Update(t, c, queued, func(b *obv1.OBTenantBackup) { b.Spec.Cancel = true })
	testenv.Update(t, c, slow, func(b *obv1.OBTenantBackup) { b.Spec.Cancel = true })
	status(slow, "canceled", func(b *obv1.OBTenantBackup) bool {
		return b.Status.JobStatus == obv1.BackupJobCanceled && readyReason(b) == obv1.ReasonBackupCanceled
	})
	status(queued, "canceled before it started", func(b *obv1.OBTenantBackup) bool {
		return b.Status.JobID == 0 && readyReason(b) == obv1.ReasonBackupCanceled
	})
	p.setKnobs(func(*obsim.Knobs) {})
	after := backup("after", false)
	status(after, "completed", func(b *obv1.OBTenantBackup) bool { return b.Status.JobStatus == obv1.BackupJobCompleted })
	if n := p.statements("CANCEL BACKUP"); n != 1 {
		t.Errorf("%d CANCEL BACKUP statements, want 1", n)
	}
	if n := p.statements("BACKUP DATABASE"); n != 3 {
		t.Errorf("%d BACKUP DATABASE statements, want 3 (plus, slow, after; none for the canceled queued one)", n)
	}
}
