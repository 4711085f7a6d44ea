package matrixone_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// A MatrixOneCluster restored from a Backup, against a real kube-apiserver
// and a real S3 store (versitygw): the test plays the pods and HAKeeper,
// as readyCluster does, and MatrixOne's statements (fakeAdmin).

// The backup's files (what MatrixOne's BACKUP writes, the objects made
// up), and the restore's bucket and prefix.
var backupFiles = map[string]string{
	"mo_meta":                  "0,,0823\n",
	"hakeeper/hk_data":         "hakeeper data",
	"hakeeper/hk_data.sha256":  "digest",
	"tae/0190-a":               "object a",
	"tae/0190-b":               "object b",
	"tae/ckp/meta_0-0_1-0.ckp": "checkpoint",
	"tae/tae_list":             "0190-a,8,x,true,1-0\n",
	"tae/tae_list.sha256":      "digest",
	"tae/tae_sum":              "2026-11-27 14:00:00,18,1764252000000000000-1,\n",
	"tae/tae_sum.sha256":       "digest",
}

const (
	restoreBucket = "mo-data"
	restorePrefix = "restored"
)

// restoreEnv starts the store and the controllers, writes the backup and
// its Backup (Ready) and the source's root password Secret.
func restoreEnv(t *testing.T) (client.Client, string, *fakeAdmin, *fakeProbe, *s3test.Server) {
	t.Helper()
	admin := &fakeAdmin{sessions: map[string]int{}}
	c, ns, probe := setupWith(t, func(o *matrixone.Options) { o.Admin = admin })
	srv := s3test.Start(t)
	writeKeys(t, c, ns, srv)
	backup := storeAt(t, srv, "backups/b1")
	data, err := s3client.New(srv.Location(restoreBucket, restorePrefix))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*s3client.Client{backup, data} {
		if _, err := cl.EnsureBucket(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range backupFiles {
		if err := backup.Put(t.Context(), name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	create(t, c, &mov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b1"}, Spec: mov1.BackupSpec{
		Location: mov1.S3Storage{Endpoint: srv.Endpoint(), Bucket: backupBucket, KeyPrefix: "backups/b1", Region: s3test.Region,
			PathStyle: true, CredentialsSecret: credentialsSecret}}},
		// The source cluster's generated Secret, as its LogSet "source" made it.
		build.RootPasswordSecret(&mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}}, "source's"))
	eventually(t, "the Backup Ready", func() (bool, string) {
		b := &mov1.Backup{}
		get(t, c, ns, "b1", b)
		got := condition(b, framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	return c, ns, admin, probe, srv
}

// restoredCluster is a cluster "mo" restored from the Backup b1 onto the
// store's restore prefix, with one CN group.
func restoredCluster(ns string, srv *s3test.Server) *mov1.MatrixOneCluster {
	return &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo"}, Spec: mov1.MatrixOneClusterSpec{
		SharedStorage: mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: srv.Endpoint(), Bucket: restoreBucket, KeyPrefix: restorePrefix,
			Region: s3test.Region, PathStyle: true, CredentialsSecret: credentialsSecret}},
		RootPassword: "source-root",
		RestoreFrom:  &mov1.RestoreSource{Backup: "b1"},
		LogService:   mov1.LogServiceSpec{Replicas: 1, Storage: commonv1.StorageSpec{ReclaimPolicy: commonv1.ReclaimDelete}},
		CNGroups:     []mov1.CNGroupSpec{{Name: "cn", Replicas: ptr.To[int32](1)}},
	}}
}

// listed returns the keys under the restore's prefix, relative to it.
func listed(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	cl, err := s3client.New(srv.Location(restoreBucket, restorePrefix))
	if err != nil {
		t.Fatal(err)
	}
	page, err := cl.ListPrefix(t.Context(), "", s3client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, strings.TrimPrefix(o.Key, restorePrefix+"/"))
	}
	return keys
}

// restoredKeys are what a restore of backupFiles writes, relative to the
// restore's prefix: the TAE files but the backup's own description in
// data/, HAKeeper's data in restore/.
var restoredKeys = []string{"data/0190-a", "data/0190-b", "data/ckp/meta_0-0_1-0.ckp", "restore/hk_data", "restore/hk_data.sha256"}

// waitCopied waits until the LogSet name has copied its backup, and
// returns it.
func waitCopied(t *testing.T, c client.Client, ns, name string) *mov1.LogSet {
	t.Helper()
	l := &mov1.LogSet{}
	eventually(t, "the LogSet's copy", func() (bool, string) {
		get(t, c, ns, name, l)
		r := l.Status.Restore
		return r != nil && r.DataCopiedAt != nil, condition(l, framework.ConditionReady)
	})
	return l
}

func TestClusterRestore(t *testing.T) {
	c, ns, admin, probe, srv := restoreEnv(t)
	create(t, c, restoredCluster(ns, srv))

	// The LogSet copies the backup, then its stores start, told to seed
	// HAKeeper from the copy of its data.
	l := waitCopied(t, c, ns, "mo-log")
	if got := listed(t, srv); !slices.Equal(got, restoredKeys) {
		t.Errorf("the restore copied %v, want %v", got, restoredKeys)
	}
	if r := l.Status.Restore; r.ObjectsCopied != 3 || r.BytesCopied != 26 || r.BackupTS != "1764252000000000000-1" {
		t.Errorf("status.restore = %+v", r)
	}
	if get(t, c, ns, "mo-root", &corev1.Secret{}) || get(t, c, ns, "mo-log-root", &corev1.Secret{}) {
		t.Error("a root password Secret was generated for a restored cluster")
	}
	runSet(t, c, ns, "mo-log", "r1")
	get(t, c, ns, "mo-log", l)
	cm := &corev1.ConfigMap{}
	get(t, c, ns, l.Status.ConfigRevision, cm)
	if tmpl := cm.Data[build.LogTemplateFile]; !strings.Contains(tmpl, `file-path = "RESTORE:hk_data"`) ||
		!strings.Contains(tmpl, `key-prefix = "restored/restore"`) {
		t.Errorf("the log stores' configuration does not read the copy of HAKeeper's data:\n%s", tmpl)
	}
	view := &hakeeperView{View: *healthyView(ns, "mo-log-0"), probe: probe}
	view.publish()
	runSet(t, c, ns, "mo-tn", "t1")
	view.TNStores = []wire.TNStore{{UUID: wire.StoreID(ns, "mo-tn-0"), State: wire.StoreUp}}
	view.CNStores = []wire.CNStore{{UUID: wire.StoreID(ns, "mo-cn-0"), State: wire.StoreUp, WorkState: wire.WorkStateWorking}}
	view.publish()
	admin.setView(view)
	runSet(t, c, ns, "mo-cn", "c1")

	// With the stores serving, the cluster forces a global checkpoint and
	// restarts its TN; no proxy before.
	eventually(t, "the TN pod restarted", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return !get(t, c, ns, "mo-tn-0", &corev1.Pod{}), got
	})
	if get(t, c, ns, "mo-proxy", &mov1.ProxySet{}) {
		t.Fatal("the proxies exist before the restore completed")
	}
	admin.mu.Lock()
	calls := slices.Clone(admin.calls)
	admin.mu.Unlock()
	if !slices.Contains(calls, "globalcheckpoint@10.0.0.1:6001") || admin.password != "source's" {
		t.Errorf("the admin's calls %v (password %q), want a global checkpoint through mo-cn-0 as the source's root", calls, admin.password)
	}
	// The operator restarts while the flow waits for the TN: the TN comes
	// back meanwhile, and the restarted operator does not restart it
	// again.
	tn := &appsv1.StatefulSet{}
	get(t, c, ns, "mo-tn", tn)
	restartOperator(t, ns, func() { runPod(t, c, tn, 0, "t1") })
	restarted := &corev1.Pod{}
	get(t, c, ns, "mo-tn-0", restarted)
	// Then its CNs restart, once each.
	cnBefore := &corev1.Pod{}
	get(t, c, ns, "mo-cn-0", cnBefore)
	eventually(t, "the CN pod restarted", func() (bool, string) {
		now := &corev1.Pod{}
		mc := cluster(t, c, ns)
		return !get(t, c, ns, "mo-cn-0", now) || now.UID != cnBefore.UID, fmt.Sprintf("%s; %+v; %+v", condition(mc, framework.ConditionReady), mc.Status.Restore, mc.Status.Operation)
	})
	if get(t, c, ns, "mo-proxy", &mov1.ProxySet{}) {
		t.Fatal("the proxies exist before the CNs restarted")
	}
	cnSet := &appsv1.StatefulSet{}
	get(t, c, ns, "mo-cn", cnSet)
	runPod(t, c, cnSet, 0, "c1")
	cnAfter := &corev1.Pod{}
	get(t, c, ns, "mo-cn-0", cnAfter)
	runSet(t, c, ns, "mo-proxy", "p1")
	view.ProxyStores = []wire.ProxyStore{{UUID: wire.StoreID(ns, "mo-proxy-0")}}
	view.publish()
	mc := &mov1.MatrixOneCluster{}
	eventually(t, "the restored cluster Ready", func() (bool, string) {
		mc = cluster(t, c, ns)
		got := condition(mc, framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	if r := mc.Status.Restore; r == nil || r.CompletedAt == nil || r.RestartedTN == "" || r.ObjectsCopied != 3 ||
		!slices.Equal(r.RestartedCNs, []string{string(cnBefore.UID)}) {
		t.Errorf("the cluster's status.restore = %+v", r)
	}
	now := &corev1.Pod{}
	if !get(t, c, ns, "mo-tn-0", now) || now.UID != restarted.UID {
		t.Error("the TN was restarted a second time")
	}
	if !get(t, c, ns, "mo-cn-0", now) || now.UID != cnAfter.UID {
		t.Error("the CN was restarted a second time")
	}

	// Deleted with its volumes (reclaimPolicy Delete), the restored
	// cluster leaves the source's root password Secret: another LogSet
	// generated it.
	// envtest has no garbage collector: the LogSet and the pods go as it
	// would take them.
	log := &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo-log"}}
	remove(t, c, mc, log)
	if err := c.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, log)
	if !get(t, c, ns, "source-root", &corev1.Secret{}) {
		t.Error("deleting the restored cluster deleted the source cluster's root password Secret")
	}
}

// A LogSet restored alone onto another store than the backup's: the copy
// streams each object through the operator, with each store's own keys.
func TestLogSetRestoresFromAnotherStore(t *testing.T) {
	c, ns, _, _, srv := restoreEnv(t)
	other := s3test.Start(t)
	keys := other.Credentials()
	data, err := s3client.New(other.Location(restoreBucket, restorePrefix))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := data.EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-keys"},
		StringData: map[string]string{build.EnvAccessKeyID: keys.AccessKeyID, build.EnvSecretAccessKey: keys.SecretAccessKey}},
		&mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "log"}, Spec: mov1.LogSetSpec{Replicas: 1,
			SharedStorage: mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: other.Endpoint(), Bucket: restoreBucket, KeyPrefix: restorePrefix,
				Region: s3test.Region, PathStyle: true, CredentialsSecret: "other-keys"}},
			RootPassword: "source-root",
			RestoreFrom:  &mov1.RestoreSource{Backup: "b1"}}})
	l := waitCopied(t, c, ns, "log")
	if got := listed(t, other); !slices.Equal(got, restoredKeys) {
		t.Errorf("the restore copied %v to the other store, want %v", got, restoredKeys)
	}
	for _, name := range restoredKeys {
		got, err := data.Get(t.Context(), name, 64)
		if src := backupFiles[strings.NewReplacer("data/", "tae/", "restore/", "hakeeper/").Replace(name)]; err != nil || string(got) != src {
			t.Errorf("%s holds %q, %v; want the backup's %q", name, got, err, src)
		}
	}
	if r := l.Status.Restore; r.ObjectsCopied != 3 || r.BytesCopied != 26 {
		t.Errorf("status.restore = %+v", r)
	}
	if got := listed(t, srv); len(got) != 0 {
		t.Errorf("the restore wrote into the backup's store: %v", got)
	}
}

func TestRestoreRefusesStorageThatHoldsData(t *testing.T) {
	c, ns, _, _, srv := restoreEnv(t)
	data, err := s3client.New(srv.Location(restoreBucket, restorePrefix))
	if err != nil {
		t.Fatal(err)
	}
	if err := data.Put(t.Context(), "data/someone-elses", []byte("x")); err != nil {
		t.Fatal(err)
	}
	create(t, c, restoredCluster(ns, srv))
	l := &mov1.LogSet{}
	eventually(t, "the restore refused", func() (bool, string) {
		get(t, c, ns, "mo-log", l)
		op := l.Status.Operation
		return op != nil && op.Step == "check-target-empty" && strings.Contains(op.LastError, "holds objects: a restore never writes into storage that holds data"),
			condition(l, framework.ConditionReady)
	})
	if get(t, c, ns, "mo-log", &appsv1.StatefulSet{}) {
		t.Error("a log store was created on storage that holds data")
	}
	if got := listed(t, srv); !slices.Equal(got, []string{"data/someone-elses"}) {
		t.Errorf("the refused restore wrote: %v", got)
	}
}

func TestRestoreRefusesAnEarlierClustersVolumes(t *testing.T) {
	c, ns, _, _, srv := restoreEnv(t)
	// The volume claim a LogSet "mo-log" deleted under Retain left.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-mo-log-0",
		Labels: build.Labels("mo-log", build.ComponentLog)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	create(t, c, pvc, restoredCluster(ns, srv))
	l := &mov1.LogSet{}
	eventually(t, "the restore refused", func() (bool, string) {
		get(t, c, ns, "mo-log", l)
		op := l.Status.Operation
		return op != nil && op.Step == "check-target-empty" && strings.Contains(op.LastError, "the volume claim data-mo-log-0 of an earlier LogSet mo-log exists"),
			condition(l, framework.ConditionReady)
	})
	if got := listed(t, srv); len(got) != 0 {
		t.Errorf("the refused restore wrote: %v", got)
	}
}
