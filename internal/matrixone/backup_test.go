package matrixone_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/build"
	s3client "github.com/stewardhq/steward/internal/s3"
	"github.com/stewardhq/steward/internal/s3/s3test"
	"github.com/stewardhq/steward/internal/testenv"
)

// The BackupJob and Backup controllers against a real kube-apiserver and
// a real S3 store (versitygw). envtest runs no Job controller and no
// MatrixOne: the test plays the backup pod (it writes what MatrixOne's
// BACKUP writes, then marks the Job complete or failed).

const backupBucket = "mo-backups"

func newBackupJob(ns, name string, srv *s3test.Server) *mov1.BackupJob {
	return &mov1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.BackupJobSpec{
		Cluster: "mo",
		Destination: mov1.BackupDestination{S3: &mov1.S3Storage{Endpoint: srv.Endpoint(), Bucket: backupBucket, KeyPrefix: "backups",
			Region: s3test.Region, PathStyle: true, CredentialsSecret: credentialsSecret}},
	}}
}

// storeAt returns a client of the backup store at prefix.
func storeAt(t *testing.T, srv *s3test.Server, prefix string) *s3client.Client {
	t.Helper()
	cl, err := s3client.New(srv.Location(backupBucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// writeBackup writes, under prefix, the files MatrixOne's BACKUP writes
// (and one data object), the summary saying ts; it returns their size.
func writeBackup(t *testing.T, cl *s3client.Client, ts string) int64 {
	t.Helper()
	files := map[string]string{
		"mo_meta":                 "0,,0823\n",
		"hakeeper/hk_data":        "hakeeper",
		"hakeeper/hk_data.sha256": "digest",
		"tae/0190-object":         strings.Repeat("x", 1000),
		"tae/tae_sum":             "2026-11-27 14:00:00,1000," + ts + ",\n",
	}
	var size int64
	for name, data := range files {
		if err := cl.Put(t.Context(), name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		size += int64(len(data))
	}
	return size
}

// finishJob plays the Job controller: the Job named ends complete, or
// failed.
func finishJob(t *testing.T, c client.Client, ns, name string, complete bool) {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, "the Job "+name, func() (bool, string) { return get(t, c, ns, name, job), "not yet" })
	now := metav1.Now()
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: reason, LastTransitionTime: now, LastProbeTime: now}
	}
	job.Status.StartTime = &now
	if complete {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	}
	if err := c.Status().Update(t.Context(), job); err != nil {
		t.Fatal(err)
	}
}

// waitJob waits until the BackupJob name's Ready condition starts with
// want, and returns it.
func waitJob(t *testing.T, c client.Client, ns, name, want string) *mov1.BackupJob {
	t.Helper()
	j := &mov1.BackupJob{}
	eventually(t, "the BackupJob "+name+" "+want, func() (bool, string) {
		get(t, c, ns, name, j)
		got := condition(j, framework.ConditionReady)
		return strings.HasPrefix(got, want), got
	})
	return j
}

func TestBackupJob(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "cn")
	srv := s3test.Start(t)
	writeKeys(t, c, ns, srv)
	if _, err := storeAt(t, srv, "").EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}

	first, second := newBackupJob(ns, "first", srv), newBackupJob(ns, "second", srv)
	create(t, c, first)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have seconds: first is the older
	create(t, c, second)
	waitJob(t, c, ns, "second", "False Queued: the BackupJob first of the same cluster has not finished")

	// The first job's pod: through the cluster's SQL Service as root, to
	// its own path, the store's keys from the Secret.
	j := waitJob(t, c, ns, "first", "False BackingUp: step run-backup")
	job := &batchv1.Job{}
	eventually(t, "the Job first-backup", func() (bool, string) { return get(t, c, ns, "first-backup", job), "not yet" })
	wantPath := "backups/" + ns + "/first-" + strings.ReplaceAll(string(j.UID), "-", "")[:8]
	pod := job.Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	for _, want := range []string{"backup --addr " + cluster(t, c, ns).Status.SQLAddress, "--bucket " + backupBucket, "--path " + wantPath, "--path-style"} {
		if !strings.Contains(args, want) {
			t.Errorf("the backup pod's arguments %q lack %q", args, want)
		}
	}
	var secrets []string
	for _, e := range pod.Containers[0].Env {
		secrets = append(secrets, e.Name+"="+e.ValueFrom.SecretKeyRef.Name)
	}
	if want := []string{"MO_PASSWORD=mo-log-root", "AWS_ACCESS_KEY_ID=" + credentialsSecret, "AWS_SECRET_ACCESS_KEY=" + credentialsSecret}; !slices.Equal(secrets, want) {
		t.Errorf("the backup pod's environment = %v, want %v", secrets, want)
	}
	if j.Status.Path != wantPath || job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("status.path %q (want %q), backoffLimit %v (want 0)", j.Status.Path, wantPath, job.Spec.BackoffLimit)
	}

	// The pod writes the backup and exits 0, while the operator restarts:
	// the restarted one finds the Job and waits on; the job records the
	// backup once the Backup reads back complete.
	var size int64
	restartOperator(t, ns, func() { size = writeBackup(t, storeAt(t, srv, wantPath), "1764252000000000000-1") })
	finishJob(t, c, ns, "first-backup", true)
	j = waitJob(t, c, ns, "first", "True Reconciled: the backup is complete and recorded as the Backup first")
	b := &mov1.Backup{}
	get(t, c, ns, "first", b)
	if b.Status.BackupTS != "1764252000000000000-1" || b.Status.Objects != 5 || b.Status.SizeBytes != size || b.Status.BackupTime == nil ||
		b.Spec.Location.KeyPrefix != wantPath || b.Spec.DeletionPolicy != commonv1.ReclaimRetain || b.Spec.Cluster != "mo" {
		t.Errorf("the Backup: spec %+v, status %+v", b.Spec, b.Status)
	}
	if j.Status.Operation.Phase != commonv1.PhaseSucceeded || j.Status.StartedAt == nil || j.Status.CompletedAt == nil {
		t.Errorf("the job's status: %+v", j.Status)
	}
	after := &batchv1.Job{}
	get(t, c, ns, "first-backup", after)
	if after.UID != job.UID {
		t.Errorf("the Job was made again (UID %s, then %s): the backup ran twice", job.UID, after.UID)
	}

	// The second job runs next. Meanwhile a third is created, and an
	// object is put where it will write: it refuses to write over it.
	waitJob(t, c, ns, "second", "False BackingUp: step run-backup")
	third := newBackupJob(ns, "third", srv)
	create(t, c, third)
	waitJob(t, c, ns, "third", "False Queued: the BackupJob second")
	get(t, c, ns, "third", third)
	thirdPath := "backups/" + ns + "/third-" + strings.ReplaceAll(string(third.UID), "-", "")[:8]
	if err := storeAt(t, srv, thirdPath).Put(t.Context(), "stray", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The second's pod fails: the job fails, nothing is recorded.
	finishJob(t, c, ns, "second-backup", false)
	failed := waitJob(t, c, ns, "second", "False Failed: the backup failed at step run-backup: ")
	if got := condition(failed, framework.ConditionReady); !strings.Contains(got, "the backup Job second-backup failed (BackoffLimitExceeded)") {
		t.Errorf("the failed job's Ready: %s", got)
	}
	if get(t, c, ns, "second", &mov1.Backup{}) {
		t.Error("a failed job recorded a Backup")
	}
	refused := waitJob(t, c, ns, "third", "False Failed: the backup failed at step check-destination: ")
	if got, want := condition(refused, framework.ConditionReady), "s3://"+backupBucket+"/"+thirdPath+"/ at "+srv.Endpoint()+" holds objects already"; !strings.Contains(got, want) {
		t.Errorf("the refused job's Ready: %s, want it to say %q", got, want)
	}

	// A Backup deleted under Retain keeps its objects; under Delete they go.
	kept := &mov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}, Spec: mov1.BackupSpec{Location: b.Spec.Location}}
	create(t, c, kept)
	remove(t, c, kept)
	waitGone(t, c, kept)
	if empty, err := storeAt(t, srv, wantPath).IsEmpty(t.Context(), ""); err != nil || empty {
		t.Fatalf("a Backup under Retain went with its objects: empty %t, %v", empty, err)
	}
	testenv.Update(t, c, b, func(b *mov1.Backup) { b.Spec.DeletionPolicy = commonv1.ReclaimDelete })
	eventually(t, "the Backup's policy observed", func() (bool, string) {
		get(t, c, ns, "first", b)
		return b.Status.ObservedGeneration == b.Generation, "not yet"
	})
	remove(t, c, b)
	waitGone(t, c, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if empty, err := storeAt(t, srv, wantPath).IsEmpty(ctx, ""); err != nil || !empty {
		t.Errorf("the Backup under Delete left objects: empty %t, %v", empty, err)
	}
	if empty, err := storeAt(t, srv, thirdPath).IsEmpty(ctx, ""); err != nil || empty {
		t.Errorf("deleting a Backup deleted another's objects: empty %t, %v", empty, err)
	}

	// A job whose name a Backup has fails before it backs anything up.
	create(t, c, &mov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clash"},
		Spec: mov1.BackupSpec{Location: mov1.S3Storage{Endpoint: srv.Endpoint(), Bucket: backupBucket, KeyPrefix: "elsewhere", Region: s3test.Region}}},
		newBackupJob(ns, "clash", srv))
	clash := waitJob(t, c, ns, "clash", "False Failed: the backup failed at step check-destination: ")
	if got := condition(clash, framework.ConditionReady); !strings.Contains(got, "a Backup clash exists") {
		t.Errorf("the clashing job's Ready: %s", got)
	}
	if get(t, c, ns, "clash-backup", &batchv1.Job{}) {
		t.Error("a job whose Backup name is taken ran a backup")
	}
}

// onClaim makes j's destination the volume claim.
func onClaim(j *mov1.BackupJob, claim string) *mov1.BackupJob {
	j.Spec.Destination = mov1.BackupDestination{VolumeClaim: &mov1.BackupVolumeClaim{ClaimName: claim}}
	return j
}

// onClaimRecord is a Backup at prefix on the volume claim's gateway, in ns.
func onClaimRecord(ns, claim, prefix string) *mov1.Backup {
	loc := build.BackupGatewayLocation(ns, claim)
	loc.KeyPrefix = prefix
	return &mov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: mov1.BackupSpec{Location: loc, VolumeClaim: claim}}
}

func TestBackupValidate(t *testing.T) {
	jobs := matrixone.NewBackupJobController(matrixone.Options{})
	dst := func(edit func(*mov1.S3Storage)) *mov1.BackupJob {
		j := &mov1.BackupJob{Spec: mov1.BackupJobSpec{Cluster: "mo", Destination: mov1.BackupDestination{S3: &mov1.S3Storage{
			Endpoint: "http://s3.steward-s3.svc:7070", Bucket: "backups", Region: "r", PathStyle: true}}}}
		if edit != nil {
			edit(j.Spec.Destination.S3)
		}
		mov1.DefaultBackupJob(j)
		return j
	}
	short := dst(nil)
	short.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
	records := matrixone.NewBackupController(matrixone.Options{})
	backup := func(prefix string) *mov1.Backup {
		return &mov1.Backup{Spec: mov1.BackupSpec{Location: mov1.S3Storage{Endpoint: "http://s3.steward-s3.svc:7070", Bucket: "backups",
			Region: "r", PathStyle: true, KeyPrefix: prefix}}}
	}
	schedules := matrixone.NewBackupScheduleController(matrixone.Options{})
	schedule := func(cron string, maxAge *metav1.Duration) *mov1.BackupSchedule {
		s := &mov1.BackupSchedule{Spec: mov1.BackupScheduleSpec{Schedule: cron, Cluster: "mo", Destination: &dst(nil).Spec.Destination,
			Retention: mov1.BackupRetention{Count: ptr.To[int32](7), MaxAge: maxAge}}}
		mov1.DefaultBackupSchedule(s)
		return s
	}
	for _, tc := range []struct {
		name string
		err  error
		want []string // in the error; none: valid
	}{
		{"a valid job", jobs.Validate(dst(nil)), nil},
		{"a CA the statement cannot take", jobs.Validate(dst(func(s *mov1.S3Storage) {
			s.Endpoint, s.CASecret = "https://s3.corp", &mov1.S3CASecret{Name: "corp-ca", Key: "ca.crt"}
		})), []string{"spec.destination.s3.caSecret", "BACKUP statement takes no CA"}},
		{"a bucket S3 refuses", jobs.Validate(dst(func(s *mov1.S3Storage) { s.Bucket = "Backups" })), []string{"spec.destination.s3.bucket"}},
		{"a credentials Secret no Secret can be named", jobs.Validate(dst(func(s *mov1.S3Storage) { s.CredentialsSecret = "S3_Keys" })),
			[]string{"spec.destination.s3.credentialsSecret"}},
		{"a timeout under a minute", jobs.Validate(short), []string{"spec.timeout", "must be at least 1m"}},
		{"a valid Backup", records.Validate(backup("backups/ns/b-1")), nil},
		{"a valid schedule", schedules.Validate(schedule("0 2 * * *", nil)), nil},
		{"a descriptor", schedules.Validate(schedule("@every 6h", nil)), nil},
		{"a cron that does not parse", schedules.Validate(schedule("0 25 * * *", nil)), []string{"spec.schedule", "end of range (25) above maximum (23)"}},
		{"a cron with seconds", schedules.Validate(schedule("0 0 2 * * *", nil)), []string{"spec.schedule", "expected exactly 5 fields"}},
		{"a retention maxAge of 0", schedules.Validate(schedule("@daily", &metav1.Duration{})), []string{"spec.retention.maxAge", "must be more than 0"}},
		{"a schedule's destination with a CA", schedules.Validate(func() *mov1.BackupSchedule {
			s := schedule("@daily", nil)
			s.Spec.Destination.S3.Endpoint, s.Spec.Destination.S3.CASecret = "https://s3.corp", &mov1.S3CASecret{Name: "ca", Key: "ca.crt"}
			return s
		}()), []string{"spec.destination.s3.caSecret", "BACKUP statement takes no CA"}},
		{"a job on a volume claim", jobs.Validate(onClaim(dst(nil), "mo-backups")), nil},
		{"both s3 and a volume claim", jobs.Validate(func() *mov1.BackupJob {
			j := onClaim(dst(nil), "mo-backups")
			j.Spec.Destination.S3 = dst(nil).Spec.Destination.S3
			return j
		}()), []string{"spec.destination", "set exactly one of s3 and volumeClaim"}},
		{"no destination", jobs.Validate(func() *mov1.BackupJob {
			j := dst(nil)
			j.Spec.Destination.S3 = nil
			return j
		}()), []string{"spec.destination", "set exactly one of s3 and volumeClaim"}},
		{"a volume claim no Service can be named after", jobs.Validate(onClaim(dst(nil), "7-backups")),
			[]string{"spec.destination.volumeClaim.claimName", `the S3 gateway's Service "7-backups-s3" is not a valid Service name`}},
		{"a schedule on a claim with dots", schedules.Validate(func() *mov1.BackupSchedule {
			s := schedule("@daily", nil)
			s.Spec.Destination = &onClaim(dst(nil), "mo.backups").Spec.Destination
			return s
		}()), []string{"spec.destination.volumeClaim.claimName", "not a valid Service name"}},
		{"a Backup on a volume claim", records.Validate(onClaimRecord("ns", "mo-backups", "ns/b-1")), nil},
		{"a Backup on a volume claim elsewhere", records.Validate(func() *mov1.Backup {
			b := onClaimRecord("ns", "mo-backups", "ns/b-1")
			b.Spec.Location.Bucket = "other"
			return b
		}()), []string{"spec.location", "a backup on the volume claim mo-backups is in its S3 gateway's bucket: endpoint http://mo-backups-s3.ns.svc:7070"}},
		{"a Backup at a bucket's root", records.Validate(backup("/")), []string{"spec.location.keyPrefix", "never a bucket's root"}},
		{"a snapshot schedule", schedules.Validate(func() *mov1.BackupSchedule {
			s := schedule("@hourly", nil)
			s.Spec.Destination, s.Spec.Snapshot = nil, &mov1.ScheduledSnapshot{Account: "acc1"}
			return s
		}()), nil},
		{"both a destination and a snapshot", schedules.Validate(func() *mov1.BackupSchedule {
			s := schedule("@hourly", nil)
			s.Spec.Snapshot = &mov1.ScheduledSnapshot{Account: "acc1"}
			return s
		}()), []string{"spec", "set exactly one of destination (physical backups) and snapshot"}},
		{"neither", schedules.Validate(func() *mov1.BackupSchedule {
			s := schedule("@hourly", nil)
			s.Spec.Destination = nil
			return s
		}()), []string{"spec", "set exactly one of destination (physical backups) and snapshot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 {
				if tc.err != nil {
					t.Fatalf("refused: %v", tc.err)
				}
				return
			}
			if tc.err == nil {
				t.Fatalf("accepted, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.err.Error(), w) {
					t.Errorf("error %q lacks %q", tc.err, w)
				}
			}
		})
	}
}

// scheduleJobs returns the schedule's BackupJobs, oldest first.
func scheduleJobs(t *testing.T, c client.Client, ns string) []mov1.BackupJob {
	t.Helper()
	var list mov1.BackupJobList
	if err := c.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{"matrixone.steward.dev/backup-schedule": "every"}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b mov1.BackupJob) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// runScheduled plays the pod of the schedule's BackupJob job: it writes
// the backup and completes; the job records it.
func runScheduled(t *testing.T, c client.Client, ns string, srv *s3test.Server, job string) {
	t.Helper()
	j := waitJob(t, c, ns, job, "False BackingUp: step run-backup")
	writeBackup(t, storeAt(t, srv, j.Status.Path), "1764252000000000000-1")
	finishJob(t, c, ns, job+"-backup", true)
	waitJob(t, c, ns, job, "True")
}

func TestBackupSchedule(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "cn")
	srv := s3test.Start(t)
	writeKeys(t, c, ns, srv)
	if _, err := storeAt(t, srv, "").EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	template := newBackupJob(ns, "x", srv)
	s := &mov1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "every"}, Spec: mov1.BackupScheduleSpec{
		Schedule: "@every 2s", Cluster: "mo", Destination: &template.Spec.Destination,
		Retention: mov1.BackupRetention{Count: ptr.To[int32](1)},
	}}
	create(t, c, s)

	// The first run's job; while it runs, the runs due are skipped.
	var first string
	eventually(t, "the first run's BackupJob", func() (bool, string) {
		jobs := scheduleJobs(t, c, ns)
		if len(jobs) > 0 {
			first = jobs[0].Name
		}
		return len(jobs) > 0, fmt.Sprintf("%d jobs", len(jobs))
	})
	time.Sleep(5 * time.Second) // two runs come due meanwhile
	if jobs := scheduleJobs(t, c, ns); len(jobs) != 1 {
		t.Fatalf("%d jobs while the first runs, want 1: concurrency is forbidden", len(jobs))
	}
	get(t, c, ns, "every", s)
	if s.Status.Active != first || s.Status.LastScheduleTime == nil || time.Since(s.Status.LastScheduleTime.Time) > 4*time.Second {
		t.Errorf("while the first job runs: status %+v", s.Status)
	}
	runScheduled(t, c, ns, srv, first)
	firstBackup := &mov1.Backup{}
	get(t, c, ns, first, firstBackup)
	if firstBackup.Spec.DeletionPolicy != commonv1.ReclaimDelete || firstBackup.Labels["matrixone.steward.dev/backup-schedule"] != "every" {
		t.Errorf("the scheduled Backup: labels %v, spec %+v", firstBackup.Labels, firstBackup.Spec)
	}

	// The next run records the second Backup; retention keeps one: the
	// first goes, with its objects, and so does its job.
	var second string
	eventually(t, "the second run's BackupJob", func() (bool, string) {
		jobs := scheduleJobs(t, c, ns)
		if n := len(jobs); n > 0 && jobs[n-1].Name != first {
			second = jobs[n-1].Name
		}
		return second != "", fmt.Sprintf("%d jobs", len(jobs))
	})
	// Suspended, the schedule takes no run after this one.
	// The controller writes the schedule's status meanwhile: retried on a
	// conflict.
	testenv.Update(t, c, s, func(s *mov1.BackupSchedule) { s.Spec.Suspend = true })
	runScheduled(t, c, ns, srv, second)
	waitGone(t, c, firstBackup)
	waitGone(t, c, &mov1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first}})
	if empty, err := storeAt(t, srv, firstBackup.Spec.Location.KeyPrefix).IsEmpty(t.Context(), ""); err != nil || !empty {
		t.Errorf("the expired Backup's objects: empty %t, %v", empty, err)
	}
	eventually(t, "the schedule's status", func() (bool, string) {
		get(t, c, ns, "every", s)
		return s.Status.LastBackup == second && s.Status.Backups == 1 && s.Status.NextScheduleTime == nil && s.Status.Active == "",
			fmt.Sprintf("%+v", s.Status)
	})
	time.Sleep(3 * time.Second)
	if jobs := scheduleJobs(t, c, ns); len(jobs) != 1 || jobs[0].Name != second {
		t.Errorf("suspended, the schedule has jobs %v, want only %s", jobs, second)
	}
}
