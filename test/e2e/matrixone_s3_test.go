//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// The local cluster's S3 server, as hack/versitygw.sh starts it
// (hack/versitygw.yaml).
const (
	s3Namespace = "steward-s3"
	s3Endpoint  = "http://versitygw." + s3Namespace + ".svc:7070"
	s3Region    = "us-east-1"
	// s3Bucket is the bucket every spec's claims are in, each under a
	// prefix named after the spec's namespace.
	s3Bucket = "matrixone"
)

// moS3Spec runs a MatrixOneCluster whose shared storage is a BucketClaim
// (Retain) on versitygw, the S3 server the suite starts in the cluster
// (hack/versitygw.sh), path-style: it bootstraps and serves SQL through
// the proxy; under writes the TN pod and the log pod are killed and every
// acknowledged write is found; MatrixOne's objects are under the claim's
// prefix in the bucket (listed by internal/s3 through a port-forward);
// the cluster is deleted (the claim Released, its objects kept) and
// re-created naming the same claim, which binds the new LogSet, and every
// row is back. Meanwhile a second cluster, on a claim with Delete, writes
// there; once it is deleted the claim goes and its prefix is empty. Before
// that, a backup under writes (the operator killed in it) is restored into
// a new cluster, a schedule keeps one backup, and an account snapshot is
// restored in place and into another account. The clusters are the
// umbrella spec's with one CN: about 2.9 GiB of memory limits for the
// first (its CN has 1536Mi, for RESTORE ACCOUNT), 2 GiB for the others, two
// at once at most.
func moS3Spec(t *testing.T, in specInput) {
	installOperator(t)
	m := &moCluster{scenario: newScenario(t, "mos3", "matrixonecluster", "mo", "cn"), image: in.image(t, "matrixone")}
	// The CN has 1536Mi: MatrixOne's RESTORE ACCOUNT (the snapshot step)
	// got a CN of 640Mi OOM-killed, even for an account of a few rows, and
	// one of 1Gi once in CI (1019 MiB anonymous when it was killed); the
	// step prints the peak.
	s := &moS3{moUmbrella: &moUmbrella{moCluster: m, sharedStorage: "{bucketClaim: " + moS3Retained + "}", cns: 1, cnMemory: "1536Mi"}, spec: t}
	m.runSteps(t, s.dump, []step{
		{"create on a BucketClaim on versitygw", s.create},
		{"the TN pod killed under writes", func(t *testing.T) { m.killUnderWrites(t, moClusterTN+"-0") }},
		{"the log pod killed under writes", func(t *testing.T) { m.killUnderWrites(t, moClusterLog+"-0") }},
		{"MatrixOne's objects under the claim's prefix", s.objectsThere},
		{"a backup to a volume claim under writes, recorded and read back", s.backUp},
		{"the backup restored into a new cluster on versitygw, copied across stores", s.restore},
		{"a schedule runs twice and its retention deletes the older backup", s.schedule},
		{"an account snapshot, restored in place and into another account, then dropped", s.snapshot},
		{"delete and re-create on the Retained claim, a second cluster on a Delete claim of its template meanwhile", s.recreate},
		{"the Delete claim's prefix empty once its cluster is gone", s.deleteEmpties},
	})
}

// The spec's claims and its second cluster.
const (
	moS3Retained = "mo-data"
	moS3Deleted  = "mo-scratch"
	moS3Second   = "mo2"
)

type moS3 struct {
	*moUmbrella
	// spec is the spec's test, which outlives its steps: the
	// port-forward lasts as long.
	spec *testing.T
	// keys are versitygw's root keys, which the claims' Secret holds.
	keys *s3.Credentials
	// store is an S3 client for the bucket's root, through a port-forward
	// to versitygw's Service.
	store *s3.Client
	// logSetUID is the first cluster's LogSet's, which the claim binds.
	logSetUID types.UID
	// backupStarted and backupDone are when the BackupJob was created and
	// when it was Ready: a write acknowledged before the first is in the
	// backup, one acknowledged after the second is not.
	backupStarted, backupDone time.Time
	// committedBefore are the rows the source held when the BackupJob was
	// created: every one of them is in the backup.
	committedBefore map[int]bool
}

// startS3 starts versitygw with hack/versitygw.sh (idempotent: the first
// spec that needs it starts it, the others find it) and returns its root
// keys.
func startS3(t *testing.T) *s3.Credentials {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(filepath.Join(env.root, "hack", "versitygw.sh"))
	cmd.Env = append(os.Environ(), "KUBECTL="+filepath.Join(env.binDir, "kubectl"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := kubectl("logs", "-n", s3Namespace, "versitygw-0", "--tail=40")
		fatalf(t, "hack/versitygw.sh: %v: %s\nversitygw's log:\n%s", err, out, logs)
	}
	t.Logf("%s (%s)", strings.TrimSpace(string(out)), time.Since(start).Round(time.Second))
	secret, err := env.client.CoreV1().Secrets(s3Namespace).Get(context.Background(), "versitygw-root", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	return &s3.Credentials{AccessKeyID: string(secret.Data["AWS_ACCESS_KEY_ID"]), SecretAccessKey: string(secret.Data["AWS_SECRET_ACCESS_KEY"])}
}

// claim is a BucketClaim on versitygw's bucket, under the prefix
// <namespace>/<name>, with the keys of the Secret s3-keys.
func (s *moS3) claim(name string, policy commonv1.ReclaimPolicy) string {
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: BucketClaim
metadata: {name: %s, namespace: %s}
spec: %s
`, name, s.ns, s.claimSpec(name, policy))
}

// claimSpec is the spec of the claim name (its prefix is
// <namespace>/<name>), as one line of YAML.
func (s *moS3) claimSpec(name string, policy commonv1.ReclaimPolicy) string {
	return fmt.Sprintf(`{s3: {endpoint: %q, region: %s, bucket: %s, keyPrefix: %s/%s, pathStyle: true, credentialsSecret: s3-keys}, reclaimPolicy: %s}`,
		s3Endpoint, s3Region, s3Bucket, s.ns, name, policy)
}

// create starts versitygw, gives the namespace its keys (Secret s3-keys)
// and the claim, and creates the cluster on it: it is Ready, bound, and
// serves SQL.
func (s *moS3) create(t *testing.T) {
	s.keys = startS3(t)
	if out, err := kubectl("create", "secret", "generic", "s3-keys", "-n", s.ns,
		"--from-literal=AWS_ACCESS_KEY_ID="+s.keys.AccessKeyID, "--from-literal=AWS_SECRET_ACCESS_KEY="+s.keys.SecretAccessKey); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	if out, err := kubectlStdin(s.claim(moS3Retained, commonv1.ReclaimRetain), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	took := s.createTimed(t)
	t.Logf("Bootstrapped on S3 (versitygw) in %s", took.Round(time.Second))
	bc := s.waitClaim(moS3Retained, time.Minute, func(bc *mov1.BucketClaim) error {
		if bc.Status.Phase != mov1.BucketClaimBound || bc.Status.BoundTo == nil || bc.Status.BoundTo.Name != moClusterLog {
			return fmt.Errorf("phase %s, bound to %+v", bc.Status.Phase, bc.Status.BoundTo)
		}
		return nil
	})
	s.logSetUID = bc.Status.BoundTo.UID
	addr := portForward(s.spec, s3Namespace, "svc/versitygw", 7070)
	var err error
	if s.store, err = s3.New(s3.Location{Endpoint: "http://" + addr, Region: s3Region, Bucket: s3Bucket,
		PathStyle: true, Credentials: s.keys}); err != nil {
		fatalNow(t, err)
	}
}

// waitClaim waits until check accepts the claim name, and returns it.
func (s *moS3) waitClaim(name string, timeout time.Duration, check func(*mov1.BucketClaim) error) *mov1.BucketClaim {
	s.t.Helper()
	bc := &mov1.BucketClaim{}
	eventually(s.t, timeout, "BucketClaim "+name, func(ctx context.Context) error {
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, bc); err != nil {
			return err
		}
		return check(bc)
	})
	return bc
}

// list lists every object under the prefix, all pages.
func (s *moS3) list(ctx context.Context, prefix string) ([]s3.Object, error) {
	return s.listIn(ctx, s.store, prefix)
}

// listIn lists every object under prefix of store's bucket.
func (s *moS3) listIn(ctx context.Context, store *s3.Client, prefix string) ([]s3.Object, error) {
	var objects []s3.Object
	opts := s3.ListOptions{}
	for {
		page, err := store.ListPrefix(ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		objects = append(objects, page.Objects...)
		if page.Next == "" {
			return objects, nil
		}
		opts.After = page.Next
	}
}

// waitObjects flushes the table e2e.t of the cluster whose proxy is
// proxy (the prefix of its sets' names) to the shared storage, waits until
// the objects are under the claim's prefix (data/) and logs what is there,
// by directory. MatrixOne 1.2.4's TN neither checkpoints nor flushes on
// its own in its first 5 minutes (the checkpoint runner's startupLatency,
// which no configuration sets): the flush is asked for, with mo_ctl.
func (s *moS3) waitObjects(t *testing.T, cluster, claim string) {
	t.Helper()
	var out string
	eventually(t, time.Minute, "e2e.t flushed", func(context.Context) error {
		var err error
		out, err = s.sqlOn(cluster, "select mo_ctl('dn', 'flush', 'e2e.t')")
		return err
	})
	t.Logf("mo_ctl flush of e2e.t: %s", strings.TrimSpace(out))
	prefix := s.ns + "/" + claim
	var objects []s3.Object
	eventually(t, 2*time.Minute, "objects under "+prefix+"/data", func(ctx context.Context) error {
		var err error
		if objects, err = s.list(ctx, prefix); err != nil {
			return err
		}
		for _, o := range objects {
			if strings.HasPrefix(o.Key, prefix+"/data/") {
				return nil
			}
		}
		return fmt.Errorf("%d objects under %s, none under data/", len(objects), prefix)
	})
	dirs := map[string][2]int64{}
	for _, o := range objects {
		rel := strings.TrimPrefix(o.Key, prefix+"/")
		parts := strings.SplitN(rel, "/", 3)
		dir := parts[0]
		if len(parts) == 3 {
			dir += "/" + parts[1]
		}
		d := dirs[dir]
		dirs[dir] = [2]int64{d[0] + 1, d[1] + o.Size}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	var line []string
	for _, d := range names {
		line = append(line, fmt.Sprintf("%s: %d (%d KiB)", d, dirs[d][0], dirs[d][1]/1024))
	}
	t.Logf("s3://%s/%s holds %d objects: %s", s3Bucket, prefix, len(objects), strings.Join(line, ", "))
}

// objectsThere lists the claim's prefix: MatrixOne's data is there.
func (s *moS3) objectsThere(t *testing.T) { s.waitObjects(t, "mo", moS3Retained) }

// sqlOn runs query as root through the proxy of the MatrixOneCluster
// cluster.
func (s *moS3) sqlOn(cluster, query string) (string, error) {
	if cluster == "mo" {
		return s.sql(query)
	}
	name := cluster + "-log-root"
	mc := &mov1.MatrixOneCluster{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: cluster}, mc); err == nil && mc.Status.RootPasswordSecret != "" {
		name = mc.Status.RootPasswordSecret
	}
	secret, err := env.client.CoreV1().Secrets(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return moSQL(s.ns, fmt.Sprintf("%s-proxy.%s.svc:6001", cluster, s.ns), string(secret.Data["password"]), query)
}

// recreate deletes the cluster: the claim is Released, still naming the
// gone LogSet, and its objects stay. Then it creates a second claim, with
// Delete, and a second cluster on it, and re-creates the first cluster
// naming the same claim, which binds its new LogSet: every row is back.
func (s *moS3) recreate(t *testing.T) {
	var kept int
	s.recreateAround(t, func() {
		s.waitClaim(moS3Retained, time.Minute, func(bc *mov1.BucketClaim) error {
			if bc.Status.Phase != mov1.BucketClaimReleased || bc.Status.BoundTo == nil || bc.Status.BoundTo.UID != s.logSetUID {
				return fmt.Errorf("phase %s, bound to %+v", bc.Status.Phase, bc.Status.BoundTo)
			}
			return nil
		})
		objects, err := s.list(context.Background(), s.ns+"/"+moS3Retained)
		if err != nil {
			fatalNow(t, err)
		}
		if kept = len(objects); kept == 0 {
			fatalNow(t, "no object left under the Retained claim's prefix")
		}
		t.Logf("The claim Released with its %d objects", kept)
		if out, err := kubectlStdin(s.second(), "apply", "-f", "-"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	})
	bc := s.waitClaim(moS3Retained, time.Minute, func(bc *mov1.BucketClaim) error {
		if bc.Status.Phase != mov1.BucketClaimBound || bc.Status.BoundTo == nil || bc.Status.BoundTo.UID == s.logSetUID {
			return fmt.Errorf("phase %s, bound to %+v", bc.Status.Phase, bc.Status.BoundTo)
		}
		return nil
	})
	t.Logf("The claim bound again, to the new LogSet %s", bc.Status.BoundTo.UID)
}

// second is the second cluster, on the Delete claim its LogSet makes from
// the cluster's template: the first's shape, MatrixOne's default
// configuration, its log store's volume deleted with it.
func (s *moS3) second() string {
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: MatrixOneCluster
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  image: %[3]s
  imagePullPolicy: Never
  sharedStorage: {bucketClaim: %[4]s, bucketClaimTemplate: %[5]s}
  logService: {replicas: 1, resources: {limits: {memory: 384Mi}}, storage: {size: 256Mi, reclaimPolicy: Delete}}
  tn: {resources: {limits: {memory: 768Mi}}, storage: {size: 512Mi}}
  cnGroups: [{name: cn, replicas: 1, resources: {limits: {memory: 640Mi}}, storage: {size: 256Mi}}]
  proxy: {resources: {limits: {memory: 192Mi}}}
`, moS3Second, s.ns, s.image, moS3Deleted, s.claimSpec(moS3Deleted, commonv1.ReclaimDelete))
}

// deleteEmpties waits for the second cluster and its objects, deletes it,
// and waits until its claim, under Delete, emptied the prefix and went.
func (s *moS3) deleteEmpties(t *testing.T) {
	if out, err := kubectl("wait", "-n", s.ns, "matrixonecluster/"+moS3Second, "--for=condition=Ready", "--timeout=6m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	for _, q := range []string{"create database if not exists e2e", "create table if not exists e2e.t (id int primary key)", "insert into e2e.t values (1)"} {
		eventually(t, time.Minute, q, func(context.Context) error { _, err := s.sqlOn(moS3Second, q); return err })
	}
	s.waitObjects(t, moS3Second, moS3Deleted)
	made := &mov1.BucketClaim{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: moS3Deleted}, made); err != nil {
		fatalNow(t, err)
	}
	if want := build.Labels(moS3Second+"-log", build.ComponentShared); !maps.Equal(made.Labels, want) || len(made.OwnerReferences) != 0 {
		errorf(t, "the claim of the template: labels %v, owners %v; want the LogSet's, none", made.Labels, made.OwnerReferences)
	}
	start := time.Now()
	if out, err := kubectl("delete", "matrixonecluster", moS3Second, "-n", s.ns, "--wait=true", "--timeout=3m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	var last *mov1.BucketClaim
	var once sync.Once
	eventually(t, 4*time.Minute, "the Delete claim gone", func(ctx context.Context) error {
		bc := &mov1.BucketClaim{}
		err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: moS3Deleted}, bc)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		if bc.Status.Deletion != nil {
			once.Do(func() { t.Logf("Emptying the prefix (started %s)", bc.Status.Deletion.StartedAt) })
		}
		last = bc
		return fmt.Errorf("phase %s, deletion %+v", bc.Status.Phase, bc.Status.Deletion)
	})
	if last != nil && last.Status.Deletion != nil {
		t.Logf("Last seen deletion progress: %+v", *last.Status.Deletion)
	}
	objects, err := s.list(context.Background(), s.ns+"/"+moS3Deleted)
	if err != nil {
		fatalNow(t, err)
	}
	if len(objects) != 0 {
		errorf(t, "%d objects left under the Delete claim's prefix, the first %s", len(objects), objects[0].Key)
	}
	kept, err := s.list(context.Background(), s.ns+"/"+moS3Retained)
	if err != nil || len(kept) == 0 {
		errorf(t, "the Retained claim's prefix after the other's deletion: %d objects, %v", len(kept), err)
	}
	out, _ := kubectl("get", "events", "-n", s.ns, "--field-selector", "involvedObject.name="+moS3Deleted, "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	t.Logf("The cluster deleted, the claim emptied and gone in %s; its events:\n%s", time.Since(start).Round(time.Second), out)
	if !strings.Contains(out, mov1.EventPrefixEmptied) {
		errorf(t, "no %s event", mov1.EventPrefixEmptied)
	}
}

// moS3Backups is the bucket on versitygw the spec's scheduled backups go
// to, each under scheduled/<namespace>/.
const moS3Backups = "matrixone-backups"

// moS3BackupClaim is the volume claim the spec's BackupJob writes to.
const moS3BackupClaim = "mo-backups"

// backUp runs a BackupJob of the cluster to a volume claim while a client
// writes through the proxy: Steward serves the claim over S3 (its
// gateway, versitygw, in the spec's namespace), MatrixOne's BACKUP runs
// from the job's pod, the job records a Backup, and the Backup reads back
// complete from the gateway (mo_meta, hakeeper/hk_data, tae/ with its
// checkpoints, and MatrixOne's consistent point).
func (s *moS3) backUp(t *testing.T) {
	job := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[2]s, namespace: %[1]s}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 256Mi}}}
---
apiVersion: matrixone.steward.dev/v1alpha1
kind: BackupJob
metadata: {name: mo-backup, namespace: %[1]s}
spec:
  cluster: mo
  destination: {volumeClaim: {claimName: %[2]s}}
  deletionPolicy: Delete
`, s.ns, moS3BackupClaim)
	s.otherClaims = append(s.otherClaims, moS3BackupClaim)
	s.underWrites(t, func() {
		// A few seconds of writes first, so that the backup has rows of
		// this step's to keep.
		time.Sleep(5 * time.Second)
		s.committedBefore = s.ids(t, "mo")
		s.backupStarted = time.Now()
		if out, err := kubectlStdin(job, "apply", "-f", "-"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		jobUID := s.killDuringBackup(t)
		if out, err := kubectl("wait", "-n", s.ns, "backupjob/mo-backup", "--for=condition=Ready", "--timeout=4m"); err != nil {
			fatalf(t, "the BackupJob: %v: %s", err, out)
		}
		s.backupDone = time.Now()
		if job, err := env.client.BatchV1().Jobs(s.ns).Get(context.Background(), "mo-backup-backup", metav1.GetOptions{}); err != nil || job.UID != jobUID {
			errorf(t, "the backup pod's Job after the operator's restart: %v (UID %s before)", err, jobUID)
		}
		for _, reason := range []string{mov1.EventBackupStarted, mov1.EventBackupRecorded} {
			if n := eventCount(t, s.ns, "mo-backup", reason); n != 1 {
				errorf(t, "%d %s Events, want one: the backup ran more than once", n, reason)
			}
		}
	})
	took := s.backupDone.Sub(s.backupStarted)
	b := &mov1.Backup{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "mo-backup"}, b); err != nil {
		fatalNow(t, err)
	}
	if b.Status.BackupTS == "" || b.Status.Objects == 0 || b.Spec.VolumeClaim != moS3BackupClaim || b.Spec.Location.Bucket != "backups" {
		errorf(t, "the Backup: spec %+v, status %+v", b.Spec, b.Status)
	}
	// The gateway, read as the suite reaches Services, with its keys.
	keys, err := env.client.CoreV1().Secrets(s.ns).Get(context.Background(), moS3BackupClaim+"-s3-keys", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	addr := portForward(s.spec, s.ns, "svc/"+moS3BackupClaim+"-s3", 7070)
	backups, err := s3.New(s3.Location{Endpoint: "http://" + addr, Region: b.Spec.Location.Region, Bucket: b.Spec.Location.Bucket,
		PathStyle: true, Credentials: &s3.Credentials{AccessKeyID: string(keys.Data["AWS_ACCESS_KEY_ID"]),
			SecretAccessKey: string(keys.Data["AWS_SECRET_ACCESS_KEY"])}})
	if err != nil {
		fatalNow(t, err)
	}
	objects, err := s.listIn(context.Background(), backups, b.Spec.Location.KeyPrefix)
	if err != nil {
		fatalNow(t, err)
	}
	var size int64
	found := map[string]bool{}
	for _, o := range objects {
		size += o.Size
		rel := strings.TrimPrefix(o.Key, b.Spec.Location.KeyPrefix+"/")
		found[rel] = true
		if strings.HasPrefix(rel, "tae/ckp/") {
			found["tae/ckp/"] = true
		}
	}
	for _, want := range []string{"mo_meta", "hakeeper/hk_data", "tae/tae_sum", "tae/tae_list", "tae/ckp/"} {
		if !found[want] {
			errorf(t, "no %s under %s on the volume claim %s", want, b.Spec.Location.KeyPrefix, moS3BackupClaim)
		}
	}
	if int64(len(objects)) != b.Status.Objects || size != b.Status.SizeBytes {
		errorf(t, "the Backup says %d objects, %d bytes; the store lists %d, %d bytes", b.Status.Objects, b.Status.SizeBytes, len(objects), size)
	}
	t.Logf("Backed up under writes in %s (job to Ready): %d objects, %d KiB, consistent at %s, under %s on the volume claim %s",
		took.Round(time.Second), len(objects), size/1024, b.Status.BackupTS, b.Spec.Location.KeyPrefix, moS3BackupClaim)
}

// killDuringBackup kills the leading operator replica as soon as the
// BackupJob mo-backup started its backup pod's Job (the pod runs for a few
// seconds at least), and returns the Job's UID: the replica that takes
// over must wait for that Job, not start another, and record the backup
// once.
func (s *moS3) killDuringBackup(t *testing.T) types.UID {
	deadline := time.Now().Add(2 * time.Minute)
	j := &mov1.BackupJob{}
	for {
		if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "mo-backup"}, j); err != nil {
			fatalNow(t, err)
		}
		if j.Status.StartedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			fatalf(t, "the backup did not start in 2 minutes: %+v", j.Status.Operation)
		}
		time.Sleep(200 * time.Millisecond)
	}
	job, err := env.client.BatchV1().Jobs(s.ns).Get(context.Background(), "mo-backup-backup", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	if j.Status.Backup != "" {
		fatalf(t, "the backup was recorded before the operator could be killed in it")
	}
	leader := killLeader(t)
	t.Logf("Killed the operator %s while the backup ran (step %s, Job %s active %d, succeeded %d)",
		leader, j.Status.Operation.Step, job.Name, job.Status.Active, job.Status.Succeeded)
	return job.UID
}

// The restored cluster, on a claim of its own.
const (
	moS3Restored      = "restored"
	moS3RestoredClaim = "mo-restored"
)

// restore creates a MatrixOneCluster restored from the backup, on a claim
// with Delete, with the source's root password: once Ready (after the
// copy, the forced global checkpoint and the TN's restart), every row
// acknowledged before the backup started is there, none acknowledged
// after it ended, and none the source does not have. A table created
// there gets an ID above every restored one (HAKeeper's allocators were
// seeded from the backup); rows written there survive a TN restart (the
// forced global checkpoint). Then it is deleted, and its claim empties.
func (s *moS3) restore(t *testing.T) {
	var before, after []int
	for _, w := range s.acked {
		switch {
		case w.at.Before(s.backupStarted):
			before = append(before, w.id)
		case w.at.After(s.backupDone):
			after = append(after, w.id)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		fatalf(t, "the writer acknowledged %d writes before the backup and %d after it: nothing to compare", len(before), len(after))
	}
	cluster := fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: MatrixOneCluster
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  image: %[3]s
  imagePullPolicy: Never
  sharedStorage: {bucketClaim: %[4]s}
  rootPassword: %[5]s-root
  restoreFrom: {backup: mo-backup}
  logService: {replicas: 1, resources: {limits: {memory: 384Mi}}, storage: {size: 256Mi, reclaimPolicy: Delete}}
  tn: {resources: {limits: {memory: 768Mi}}, storage: {size: 512Mi, reclaimPolicy: Delete}}
  cnGroups: [{name: cn, replicas: 1, resources: {limits: {memory: 640Mi}}, storage: {size: 256Mi, reclaimPolicy: Delete}}]
  proxy: {resources: {limits: {memory: 192Mi}}}
`, moS3Restored, s.ns, s.image, moS3RestoredClaim, moClusterLog)
	start := time.Now()
	if out, err := kubectlStdin(s.claim(moS3RestoredClaim, commonv1.ReclaimDelete)+"---\n"+cluster, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	// The operator is killed while the restore restarts the TN: the new
	// one finishes it, restarting the TN once.
	eventually(t, 6*time.Minute, "the restore restarting its TN", func(ctx context.Context) error {
		mc := &mov1.MatrixOneCluster{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: moS3Restored}, mc); err != nil {
			return err
		}
		if op := mc.Status.Operation; op != nil && op.Name == "finish-restore" && op.Step == "restart-tn" && op.Phase == commonv1.PhaseRunning {
			return nil
		}
		if r := mc.Status.Restore; r != nil && r.CompletedAt != nil {
			fatalf(t, "the restore completed before the operator could be killed in it")
		}
		return fmt.Errorf("operation %+v", mc.Status.Operation)
	})
	leader := killLeader(t)
	t.Logf("Killed the operator %s while the restore restarted the TN, %s after the cluster's creation", leader, time.Since(start).Round(time.Second))
	if out, err := kubectl("wait", "-n", s.ns, "matrixonecluster/"+moS3Restored, "--for=condition=Ready", "--timeout=8m"); err != nil {
		fatalf(t, "the restored cluster: %v: %s", err, out)
	}
	took := time.Since(start)
	if restoredEvents := eventCount(t, s.ns, moS3Restored, mov1.EventRestored); restoredEvents != 1 {
		errorf(t, "%d %s Events, want one: the restore finished more than once", restoredEvents, mov1.EventRestored)
	}
	mc := &mov1.MatrixOneCluster{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: moS3Restored}, mc); err != nil {
		fatalNow(t, err)
	}
	r := mc.Status.Restore
	if r == nil || r.CompletedAt == nil || r.DataCopiedAt == nil || r.RestartedTN == "" || r.ObjectsCopied == 0 {
		fatalf(t, "the restored cluster's status.restore: %+v", r)
	}
	// Status times have whole seconds.
	t.Logf("Restored in %s to Ready: %d objects (%d KiB) copied by %s after the creation, consistent at %s", took.Round(time.Second),
		r.ObjectsCopied, r.BytesCopied/1024, max(0, r.DataCopiedAt.Sub(start.Truncate(time.Second))), r.BackupTS)

	restored, source := s.ids(t, moS3Restored), s.ids(t, "mo")
	var missing, late, unknown int
	for _, id := range before {
		if !restored[id] {
			missing++
		}
	}
	for id := range s.committedBefore {
		if !restored[id] {
			missing++
		}
	}
	for _, id := range after {
		if restored[id] {
			late++
		}
	}
	for id := range restored {
		if !source[id] {
			unknown++
		}
	}
	if missing+late+unknown > 0 {
		errorf(t, "the restored rows: %d of the %d the source held and the %d acknowledged before the backup missing, %d of %d acknowledged after it present, %d the source does not have",
			missing, len(s.committedBefore), len(before), late, len(after), unknown)
	}
	t.Logf("The restored cluster holds %d rows: all %d the source held when the backup started (%d of them acknowledged in this step), none of %d acknowledged after it ended; the source holds %d",
		len(restored), len(s.committedBefore), len(before), len(after), len(source))

	// New tables get new IDs; new rows survive a TN restart. Each statement
	// is retried until it answers, so both must be right again after one
	// that timed out on the client but committed (the first statements
	// after a restore can be slow).
	for _, q := range []string{"create table if not exists e2e.after_restore (id int primary key)", "insert into e2e.after_restore values (1), (2), (3)"} {
		eventually(t, time.Minute, q, func(context.Context) error {
			_, err := s.sqlOn(moS3Restored, q)
			if err != nil && strings.Contains(err.Error(), "Duplicate entry") {
				out, cerr := s.sqlOn(moS3Restored, "select count(*) from e2e.after_restore")
				if cerr == nil && strings.TrimSpace(out) == "3" {
					return nil // an earlier try committed
				}
			}
			return err
		})
	}
	out, err := s.sqlOn(moS3Restored, "select (select rel_id from mo_catalog.mo_tables where relname = 'after_restore' and reldatabase = 'e2e') > "+
		"(select max(rel_id) from mo_catalog.mo_tables where relname <> 'after_restore')")
	if got := strings.TrimSpace(out); err != nil || got != "true" && got != "1" {
		errorf(t, "the new table's ID is not above every restored one: %q, %v", out, err)
	}
	tn := moS3Restored + "-tn-0"
	pod, err := env.client.CoreV1().Pods(s.ns).Get(context.Background(), tn, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	if out, err := kubectl("delete", "pod", "-n", s.ns, tn, "--wait=true"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 4*time.Minute, "the restored TN back, a new pod, ready", func(ctx context.Context) error {
		now, err := env.client.CoreV1().Pods(s.ns).Get(ctx, tn, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case now.UID == pod.UID:
			return fmt.Errorf("still the old pod")
		}
		for _, c := range now.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				return nil
			}
		}
		return fmt.Errorf("not ready")
	})
	eventually(t, 2*time.Minute, "the rows written after the restore, after a TN restart", func(context.Context) error {
		out, err := s.sqlOn(moS3Restored, "select count(*) from e2e.after_restore")
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(out); got != "3" {
			errorf(t, "after a TN restart the table written after the restore holds %s rows, want 3", got)
		}
		return nil
	})

	if out, err := kubectl("delete", "matrixonecluster", moS3Restored, "-n", s.ns, "--wait=true", "--timeout=3m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 4*time.Minute, "the restored cluster's claim gone", func(ctx context.Context) error {
		err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: moS3RestoredClaim}, &mov1.BucketClaim{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
}

// schedule runs a BackupSchedule every 20 seconds keeping one Backup:
// once its second Backup is complete, the first is deleted, and its
// objects are gone from the store. The schedule is then deleted.
func (s *moS3) schedule(t *testing.T) {
	schedule := fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: BackupSchedule
metadata: {name: every20s, namespace: %[1]s}
spec:
  schedule: "@every 20s"
  cluster: mo
  destination:
    s3: {endpoint: %[2]q, region: %[3]s, bucket: %[4]s, keyPrefix: scheduled, pathStyle: true, credentialsSecret: s3-keys}
  retention: {count: 1}
`, s.ns, s3Endpoint, s3Region, moS3Backups)
	backups, err := s3.New(s3.Location{Endpoint: s.store.Location().Endpoint, Region: s3Region, Bucket: moS3Backups,
		PathStyle: true, Credentials: s.keys})
	if err == nil {
		_, err = backups.EnsureBucket(context.Background()) // a BackupJob to S3 needs its bucket
	}
	if err != nil {
		fatalNow(t, err)
	}
	start := time.Now()
	if out, err := kubectlStdin(schedule, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	var first *mov1.Backup
	eventually(t, 4*time.Minute, "a second scheduled Backup, the first deleted with its objects", func(ctx context.Context) error {
		var list mov1.BackupList
		if err := s.c.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{"matrixone.steward.dev/backup-schedule": "every20s"}); err != nil {
			return err
		}
		// The API server lists by name: the schedule's and the run's
		// time, so the oldest first.
		if first == nil && len(list.Items) > 0 {
			first = list.Items[0].DeepCopy()
		}
		switch {
		case first == nil:
			return fmt.Errorf("no scheduled Backup yet")
		case len(list.Items) == 0:
			return fmt.Errorf("no scheduled Backup left")
		case list.Items[0].Name == first.Name:
			return fmt.Errorf("%d Backups, the first %s still there", len(list.Items), first.Name)
		}
		objects, err := s.listIn(ctx, backups, first.Spec.Location.KeyPrefix)
		if err != nil {
			return err
		}
		if len(objects) > 0 {
			return fmt.Errorf("%d objects left under the first Backup's path", len(objects))
		}
		return nil
	})
	out, _ := kubectl("get", "events", "-n", s.ns, "--field-selector", "involvedObject.name=every20s", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	t.Logf("Two scheduled backups, the first expired with its objects, in %s; the schedule's events:\n%s", time.Since(start).Round(time.Second), out)
	if out, err := kubectl("delete", "backupschedule", "every20s", "-n", s.ns, "--wait=true", "--timeout=2m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}

// ids returns the ids of the rows of e2e.t of the MatrixOneCluster cluster.
func (s *moS3) ids(t *testing.T, cluster string) map[int]bool {
	var out string
	eventually(t, 2*time.Minute, "the rows of "+cluster, func(context.Context) error {
		var err error
		out, err = s.sqlOn(cluster, "select id from e2e.t")
		return err
	})
	have := map[int]bool{}
	for _, f := range strings.Fields(out) {
		if id, err := strconv.Atoi(f); err == nil {
			have[id] = true
		}
	}
	return have
}

// dump is the scenario's dump, with the claims and versitygw's log.
func (s *moS3) dump() {
	s.dumpState()
	for _, args := range [][]string{
		{"get", "bucketclaims,backupjobs,backups", "-n", s.ns, "-o", "yaml"},
		{"get", "jobs,pods", "-n", s.ns, "-l", "app.kubernetes.io/component=backup", "-o", "wide"},
		{"logs", "-n", s.ns, "-l", "app.kubernetes.io/component=backup", "--tail=40"},
		{"get", "pods,pvc", "-n", s3Namespace, "-o", "wide"},
		{"logs", "-n", s3Namespace, "versitygw-0", "--tail=60"},
	} {
		out, _ := kubectl(args...)
		s.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
}

// eventCount counts the Events of reason about the object name, each
// repetition of a recorded series or count included.
func eventCount(t *testing.T, ns, name, reason string) int {
	t.Helper()
	events, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		fatalNow(t, err)
	}
	n := 0
	for _, e := range events.Items {
		switch {
		case e.Series != nil:
			n += int(e.Series.Count)
		case e.Count > 1:
			n += int(e.Count)
		default:
			n++
		}
	}
	return n
}

// snapshot takes a Snapshot of an account made for it (rows 1 to 10),
// changes the account's rows (11 to 20 added, 1 deleted), restores the
// account in place (a SnapshotRestore) and then into a second account:
// both hold rows 1 to 10 exactly. Deleting the Snapshot drops the
// snapshot from MatrixOne.
func (s *moS3) snapshot(t *testing.T) {
	proxy := fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, s.ns)
	root := func(q string) string {
		var out string
		eventually(t, time.Minute, q, func(context.Context) error {
			var err error
			out, err = s.sql(q)
			return err
		})
		return out
	}
	as := func(account, q string) string {
		var out string
		eventually(t, time.Minute, account+": "+q, func(context.Context) error {
			var err error
			out, err = moSQLAs(s.ns, proxy, account+":admin", "snap-pw", q)
			return err
		})
		return strings.TrimSpace(out)
	}
	for _, a := range []string{"snapacc", "snapcopy"} {
		root("create account if not exists " + a + " admin_name 'admin' identified by 'snap-pw'")
	}
	as("snapacc", "create database if not exists d")
	as("snapacc", "create table if not exists d.t (id int primary key)")
	as("snapacc", "insert into d.t values (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)")
	ids := func(account string) string {
		return strings.Join(strings.Fields(as(account, "select id from d.t order by id")), ",")
	}
	const want = "1,2,3,4,5,6,7,8,9,10"

	apply := func(yaml string) {
		if out, err := kubectlStdin(yaml, "apply", "-f", "-"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	}
	wait := func(what string) {
		if out, err := kubectl("wait", "-n", s.ns, what, "--for=condition=Ready", "--timeout=3m"); err != nil {
			out2, _ := kubectl("get", "-n", s.ns, what, "-o", "yaml")
			fatalf(t, "%s: %v: %s\n%s", what, err, out, out2)
		}
	}
	start := time.Now()
	apply(fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: Snapshot
metadata: {name: snap1, namespace: %s}
spec: {cluster: mo, account: snapacc}
`, s.ns))
	wait("snapshot/snap1")
	took := time.Since(start)
	listed := root("select sname, level, account_name from mo_catalog.mo_snapshots where sname = 'snap1'")
	if !strings.Contains(listed, "snapacc") {
		errorf(t, "mo_catalog.mo_snapshots: %q", listed)
	}
	as("snapacc", "insert into d.t values (11),(12),(13),(14),(15),(16),(17),(18),(19),(20)")
	as("snapacc", "delete from d.t where id = 1")
	if got := ids("snapacc"); got == want {
		fatalf(t, "the account's rows did not change after the snapshot: %s", got)
	}

	cnRestarts := func() int32 {
		p, err := env.client.CoreV1().Pods(s.ns).Get(context.Background(), moClusterCN+"-0", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			fatalf(t, "the CN pod: %v", err)
		}
		if cs := p.Status.ContainerStatuses[0]; cs.LastTerminationState.Terminated != nil {
			t.Logf("The CN's last termination: %+v", *cs.LastTerminationState.Terminated)
		}
		return p.Status.ContainerStatuses[0].RestartCount
	}
	restartsBefore := cnRestarts()
	cnMemoryPeak := samplePodMemory(t, s.ns, moClusterCN+"-0")
	restore := func(name, target string) time.Duration {
		start := time.Now()
		into := ""
		if target != "" {
			into = ", targetAccount: " + target
		}
		apply(fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: SnapshotRestore
metadata: {name: %s, namespace: %s}
spec: {snapshot: snap1, overwrite: true%s}
`, name, s.ns, into))
		wait("snapshotrestore/" + name)
		return time.Since(start)
	}
	inPlace := restore("restore-in-place", "")
	if got := ids("snapacc"); got != want {
		errorf(t, "the account restored in place holds %s, want %s", got, want)
	}
	as("snapacc", "insert into d.t values (21)") // it takes writes
	copied := restore("restore-copy", "snapcopy")
	if got := ids("snapcopy"); got != want {
		errorf(t, "the account restored into holds %s, want %s", got, want)
	}
	peak := cnMemoryPeak()
	if n := cnRestarts(); n != restartsBefore {
		errorf(t, "the CN restarted %d times during the restores", n-restartsBefore)
	}
	out, _ := kubectl("get", "-n", s.ns, "snapshots,snapshotrestores", "-o", "wide")
	t.Logf("Snapshot to Ready in %s; restored in place in %s, into another account in %s; the CN's anonymous memory peaked at %d MiB (limit %s):\n%s",
		took.Round(time.Second), inPlace.Round(time.Second), copied.Round(time.Second), peak>>20, s.cnMemory, out)

	if out, err := kubectl("delete", "-n", s.ns, "snapshot/snap1", "--timeout=2m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	if listed := root("select count(*) from mo_catalog.mo_snapshots where sname = 'snap1'"); strings.TrimSpace(listed) != "0" {
		errorf(t, "MatrixOne still lists the snapshot of the deleted Snapshot: %q", listed)
	}

	// A schedule of snapshots keeping one: once a second is taken, the
	// first is deleted and dropped from MatrixOne.
	apply(fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: BackupSchedule
metadata: {name: snaps, namespace: %s}
spec: {schedule: '@every 15s', cluster: mo, snapshot: {account: snapacc}, retention: {count: 1}}
`, s.ns))
	var first string
	eventually(t, 3*time.Minute, "a second scheduled Snapshot, the first dropped", func(ctx context.Context) error {
		var list mov1.SnapshotList
		if err := s.c.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{"matrixone.steward.dev/backup-schedule": "snaps"}); err != nil {
			return err
		}
		var taken []string
		for _, sn := range list.Items {
			if sn.Status.SnapshotName != "" {
				taken = append(taken, sn.Name)
			}
		}
		sort.Strings(taken)
		if first == "" && len(taken) > 0 {
			first = taken[0]
		}
		if first == "" || slices.Contains(taken, first) || len(taken) != 1 {
			return fmt.Errorf("taken %v (the first %q)", taken, first)
		}
		return nil
	})
	if listed := root("select sname from mo_catalog.mo_snapshots where sname like 'snaps-%'"); strings.Contains(listed, first) || strings.TrimSpace(listed) == "" {
		errorf(t, "MatrixOne lists the schedule's snapshots %q: want one, not the expired %s", listed, first)
	}
	if out, err := kubectl("delete", "-n", s.ns, "backupschedule/snaps"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}
