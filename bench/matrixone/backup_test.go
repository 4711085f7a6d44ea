//go:build bench

package matrixone

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// The backup benchmark's store: versitygw as hack/versitygw.sh starts it.
const (
	s3Namespace   = "steward-s3"
	s3Endpoint    = "http://versitygw." + s3Namespace + ".svc:7070"
	s3Region      = "us-east-1"
	dataBucket    = "bench-matrixone"
	backupsBucket = "bench-matrixone-backups"
	// defaultLoadRows rows of 256 bytes each are loaded before the backup,
	// in inserts of at most loadBatch rows; BENCH_MO_BACKUP_ROWS sets
	// another count.
	defaultLoadRows = 400000
	loadBatch       = 400000
)

// backupRows is the number of rows BenchmarkBackup loads.
func backupRows(b *testing.B) int {
	v := os.Getenv("BENCH_MO_BACKUP_ROWS")
	if v == "" {
		return defaultLoadRows
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("BENCH_MO_BACKUP_ROWS=%q: want a positive number of rows", v)
	}
	return n
}

// BenchmarkBackup loads a cluster on S3, backs it up with a BackupJob,
// copies the same objects with an S3 client (server-side, as the store
// copies them for anyone), and restores the backup into a new cluster; see
// the package documentation.
func BenchmarkBackup(b *testing.B) {
	k := connect(b)
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	ns := k.Namespace(b, "bench-mo-backup", &mov1.MatrixOneCluster{}, &mov1.BackupJob{}, &mov1.Backup{}, &mov1.BucketClaim{})
	store := k.startS3(b, root, ns)
	loadRows := backupRows(b)
	for b.Loop() {
		k.s3Cluster(b, ns, "src", "")
		k.clientPod(b, ns)
		load := []string{"create database bench", "create table bench.t (id int primary key, v varchar(256))"}
		for from := 1; from <= loadRows; from += loadBatch {
			load = append(load, fmt.Sprintf("insert into bench.t select result, repeat(md5(result), 8) from generate_series(%d, %d) g",
				from, min(from+loadBatch-1, loadRows)))
		}
		for _, q := range append(load, "select mo_ctl('dn', 'flush', 'bench.t')") {
			k.sql(b, root, ns, "src", q)
		}

		before := k.OperatorUsage(b)
		start := time.Now()
		job := &mov1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "full"}, Spec: mov1.BackupJobSpec{
			Cluster: "src", DeletionPolicy: commonv1.ReclaimDelete,
			Destination: mov1.BackupDestination{S3: &mov1.S3Storage{Endpoint: s3Endpoint, Region: s3Region, Bucket: backupsBucket,
				KeyPrefix: "backups", PathStyle: true, CredentialsSecret: "s3-keys"}},
		}}
		k.create(b, job)
		k.waitReady(b, job, 10*time.Minute)
		took := time.Since(start)
		used := k.OperatorUsage(b).Minus(before)
		statement := k.statementTime(b, ns, "full-backup")
		backup := &mov1.Backup{}
		if err := k.C.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: "full"}, backup); err != nil {
			b.Fatal(err)
		}
		mib := float64(backup.Status.SizeBytes) / (1 << 20)

		// The plain copies: the same objects, copied by an S3 client
		// server-side (no data leaves the store) and through the client
		// (each read whole and written back, as the CN copies them, here
		// through a port-forward).
		copyStart := time.Now()
		copied := store.copyAll(b, backup.Spec.Location.KeyPrefix, "plain-copy/"+ns, true)
		plain := time.Since(copyStart)
		store.deleteAll(b, "plain-copy/"+ns)
		copyStart = time.Now()
		store.copyAll(b, backup.Spec.Location.KeyPrefix, "client-copy/"+ns, false)
		throughClient := time.Since(copyStart)
		store.deleteAll(b, "client-copy/"+ns)

		restoreStart := time.Now()
		k.s3Cluster(b, ns, "restored", "full")
		sqlAt := k.waitServed(b, ns, "restored", restoreStart)
		restored := k.sql(b, root, ns, "restored", "select count(*) from bench.t")
		if strings.TrimSpace(restored) != fmt.Sprint(loadRows) {
			b.Fatalf("the restored table holds %q rows, want %d", restored, loadRows)
		}

		b.ReportMetric(mib, "MiB-backed-up")
		b.ReportMetric(mib/statement.Seconds(), "MiB/s-backup-statement")
		b.ReportMetric(mib/took.Seconds(), "MiB/s-job-to-ready")
		b.ReportMetric(float64(copied)/(1<<20)/plain.Seconds(), "MiB/s-plain-copy")
		b.ReportMetric(statement.Seconds()/plain.Seconds(), "ratio-statement-to-plain-copy-time")
		b.ReportMetric(float64(copied)/(1<<20)/throughClient.Seconds(), "MiB/s-client-copy")
		b.ReportMetric(throughClient.Seconds()/statement.Seconds(), "ratio-statement-to-client-copy-rate")
		b.ReportMetric(sqlAt.Seconds(), "s-restore-to-sql")
		b.ReportMetric(used.Requests, "api-requests/backup")
		b.ReportMetric(used.Writes, "api-writes/backup")
		b.Logf("%d rows: a backup of %.1f MiB in %d objects, statement %s, job created to Ready %s; a plain copy of them %s "+
			"server-side, %s through the client; restored: SQL %s after the apply", loadRows, mib, backup.Status.Objects,
			statement.Round(time.Millisecond), took.Round(100*time.Millisecond), plain.Round(time.Millisecond),
			throughClient.Round(time.Millisecond), sqlAt.Round(100*time.Millisecond))
		k.deleteCluster(b, ns, "restored")
		k.deleteCluster(b, ns, "src")
	}
}

// backupStore is the benchmark's S3 client, through a port-forward to
// versitygw.
type backupStore struct{ backups *s3.Client }

// startS3 starts versitygw (hack/versitygw.sh), gives ns its keys (the
// Secret s3-keys) and makes the backups' bucket; the data's bucket is its
// BucketClaims'.
func (k *kube) startS3(b *testing.B, root, ns string) *backupStore {
	b.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "versitygw.sh"))
	cmd.Env = append(os.Environ(), "KUBECTL="+filepath.Join(root, ".cache", "localkube", "bin", "kubectl"), "KUBECONFIG="+benchkube.KubeconfigPath())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("hack/versitygw.sh: %v: %s", err, out)
	}
	secret, err := k.CS.CoreV1().Secrets(s3Namespace).Get(b.Context(), "versitygw-root", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	keys := &s3.Credentials{AccessKeyID: string(secret.Data[build.EnvAccessKeyID]), SecretAccessKey: string(secret.Data[build.EnvSecretAccessKey])}
	k.create(b, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-keys"},
		StringData: map[string]string{build.EnvAccessKeyID: keys.AccessKeyID, build.EnvSecretAccessKey: keys.SecretAccessKey}})
	addr := benchkube.PortForward(b, root, s3Namespace, "svc/versitygw", 7070)
	backups, err := s3.New(s3.Location{Endpoint: "http://" + addr, Region: s3Region, Bucket: backupsBucket, PathStyle: true, Credentials: keys})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := backups.EnsureBucket(b.Context()); err != nil {
		b.Fatal(err)
	}
	return &backupStore{backups: backups}
}

// copyAll copies every object under prefix to the same name under to,
// one at a time, server-side or read and written back through the client,
// and returns the bytes copied.
func (s *backupStore) copyAll(b *testing.B, prefix, to string, serverSide bool) int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	var bytes int64
	for after := ""; ; {
		page, err := s.backups.ListPrefix(ctx, prefix, s3.ListOptions{After: after})
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range page.Objects {
			if err := s.copyOne(ctx, o, to+"/"+strings.TrimPrefix(o.Key, prefix+"/"), serverSide); err != nil {
				b.Fatal(err)
			}
			bytes += o.Size
		}
		if after = page.Next; after == "" {
			return bytes
		}
	}
}

func (s *backupStore) copyOne(ctx context.Context, o s3.Object, to string, serverSide bool) error {
	if serverSide {
		return s.backups.CopyFrom(ctx, backupsBucket, o.Key, to)
	}
	data, err := s.backups.Get(ctx, o.Key, o.Size)
	if err != nil {
		return err
	}
	return s.backups.Put(ctx, to, data)
}

// deleteAll deletes every object under prefix.
func (s *backupStore) deleteAll(b *testing.B, prefix string) {
	b.Helper()
	for {
		res, err := s.backups.DeletePrefix(b.Context(), prefix, s3.DeleteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Done {
			return
		}
	}
}

// s3Cluster creates the MatrixOneCluster name on a BucketClaim of its own
// (Delete), restored from the Backup from unless it is empty, with a probe.
func (k *kube) s3Cluster(b *testing.B, ns, name, from string) {
	b.Helper()
	k.create(b, &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.BucketClaimSpec{
		S3: mov1.S3Storage{Endpoint: s3Endpoint, Region: s3Region, Bucket: dataBucket, KeyPrefix: ns + "/" + name, PathStyle: true,
			CredentialsSecret: "s3-keys"},
		ReclaimPolicy: commonv1.ReclaimDelete,
	}})
	role := func(r build.Role) mov1.RoleSpec {
		return mov1.RoleSpec{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limits[r])}}}
	}
	small := commonv1.StorageSpec{Size: ptr.To(resource.MustParse("256Mi")), ReclaimPolicy: commonv1.ReclaimDelete}
	mc := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.MatrixOneClusterSpec{
		Image: mov1.DefaultImage, ImagePullPolicy: corev1.PullNever,
		SharedStorage: mov1.SharedStorage{BucketClaim: name},
		LogService:    mov1.LogServiceSpec{Replicas: 1, RoleSpec: role(build.RoleLog), Storage: small},
		TN:            mov1.TNSpec{RoleSpec: role(build.RoleTN), Storage: small},
		CNGroups:      []mov1.CNGroupSpec{{Name: "cn", Replicas: ptr.To[int32](1), RoleSpec: role(build.RoleCN), Storage: small}},
		Proxy:         mov1.ProxySpec{Replicas: 1, RoleSpec: role(build.RoleProxy)},
	}}
	secret := name + "-log-root"
	if from != "" {
		secret = "src-log-root"
		mc.Spec.RootPassword, mc.Spec.RestoreFrom = secret, &mov1.RestoreSource{Backup: from}
	}
	k.create(b, mc)
	k.probe(b, ns, name, name+"-proxy", secret)
	if from == "" {
		k.waitServed(b, ns, name, time.Now())
	}
}

// clientPod starts the pod "client" (the smoke image's server), whose
// /smoke sql runs the benchmark's statements.
func (k *kube) clientPod(b *testing.B, ns string) {
	b.Helper()
	k.create(b, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "client", Image: probeImage, ImagePullPolicy: corev1.PullNever,
			Args: []string{"serve", "--data", "/tmp"}, VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}}},
		Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}})
	k.waitPodReady(b, ns, "client")
}

// sql runs query as root through the proxy of cluster name, from the
// client pod, and returns what it printed.
func (k *kube) sql(b *testing.B, root, ns, name, query string) string {
	b.Helper()
	return k.sqlAs(b, root, ns, name, "src-log-root", query)
}

// sqlAs is sql with root's password in the Secret secret.
func (k *kube) sqlAs(b *testing.B, root, ns, name, secretName, query string) string {
	b.Helper()
	secret, err := k.CS.CoreV1().Secrets(ns).Get(b.Context(), secretName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	out, err := benchkube.Kubectl(root, "exec", "-n", ns, "client", "--", "/smoke", "sql", "--timeout", "10m",
		"--server", fmt.Sprintf("%s-proxy.%s.svc:%d", name, ns, build.SQLPort), "--user", "root",
		"--password", string(secret.Data[build.PasswordKey]), query)
	if err != nil {
		b.Fatalf("%s: %v: %s", query, err, out)
	}
	return out
}

// waitReady waits until obj is Ready at its generation.
func (k *kube) waitReady(b *testing.B, obj framework.Object, timeout time.Duration) {
	b.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := k.C.Get(b.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			b.Fatal(err)
		}
		if ok, _ := framework.IsReady(obj); ok {
			return
		}
	}
	b.Fatalf("%s not Ready after %s: %+v", obj.GetName(), timeout, obj.StatusCore().Conditions)
}

// statementTime reads how long MatrixOne's BACKUP ran from the
// termination message of the Job's pod ("... in <duration>").
func (k *kube) statementTime(b *testing.B, ns, job string) time.Duration {
	b.Helper()
	pods, err := k.CS.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil || len(pods.Items) != 1 {
		b.Fatalf("the pod of the Job %s: %d pods, %v", job, len(pods.Items), err)
	}
	for _, cs := range pods.Items[0].Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			_, took, ok := strings.Cut(t.Message, " in ")
			if d, err := time.ParseDuration(took); ok && err == nil {
				return d
			}
			b.Fatalf("the backup pod said %q", t.Message)
		}
	}
	b.Fatalf("the backup pod of %s has not terminated", job)
	return 0
}
