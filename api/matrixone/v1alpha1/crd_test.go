package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

var crdDir = filepath.Join("..", "..", "..", "config", "crd", "bases")

// server is a real kube-apiserver with the generated CRDs installed.
var server = testenv.APIServer{CRDDirectoryPaths: []string{crdDir}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

// apiClient returns a client of the shared API server and creates the
// namespace ns.
func apiClient(t *testing.T, ns string) client.Client {
	return server.NamespacedClient(t, ns, mov1.AddToScheme)
}

// TestDefaults checks that the CRDs' schema defaults and the Default
// functions agree on a minimal object of every kind.
func TestDefaults(t *testing.T) {
	const ns = "mo-defaults"
	c := apiClient(t, ns)
	obj := func(kind, name, spec string) *unstructured.Unstructured {
		return testenv.Object(t, mov1.GroupVersion.String(), kind, ns, name, spec)
	}
	kinds, _ := testenv.CRDs(t, crdDir, mov1.GroupVersion.Group)
	testenv.CheckDefaults(t, c, kinds, []testenv.Defaults{
		{
			Minimal: obj("MatrixOneCluster", "mo", "{sharedStorage: {fileSystem: {claimName: shared}}, cnGroups: [{name: cn}]}"),
			Typed:   &mov1.MatrixOneCluster{},
			Default: func(o client.Object) { mov1.DefaultMatrixOneCluster(o.(*mov1.MatrixOneCluster)) },
			// From logService.replicas.
			GoOnly: []string{"spec.logService.shardReplicas"},
		},
		{
			Minimal: obj("LogSet", "log", "{sharedStorage: {fileSystem: {claimName: shared}}}"),
			Typed:   &mov1.LogSet{},
			Default: func(o client.Object) { mov1.DefaultLogSet(o.(*mov1.LogSet)) },
			// From metadata.name, and from replicas.
			GoOnly: []string{"spec.rootPassword", "spec.shardReplicas"},
		},
		{
			// The S3 CA Secret's key.
			Minimal: obj("LogSet", "log-s3", "{sharedStorage: {s3: {endpoint: 'https://s3', bucket: mo-data, region: r, caSecret: {name: ca}}}}"),
			Typed:   &mov1.LogSet{},
			Default: func(o client.Object) { mov1.DefaultLogSet(o.(*mov1.LogSet)) },
			GoOnly:  []string{"spec.rootPassword", "spec.shardReplicas"},
		},
		{
			Minimal: obj("MatrixOneCluster", "mo-s3", "{sharedStorage: {s3: {endpoint: 'https://s3', bucket: mo-data, region: r, caSecret: {name: ca}}}, cnGroups: [{name: cn}]}"),
			Typed:   &mov1.MatrixOneCluster{},
			Default: func(o client.Object) { mov1.DefaultMatrixOneCluster(o.(*mov1.MatrixOneCluster)) },
			GoOnly:  []string{"spec.logService.shardReplicas"},
		},
		{
			Minimal: obj("LogSet", "log-claim", "{sharedStorage: {bucketClaim: data}}"),
			Typed:   &mov1.LogSet{},
			Default: func(o client.Object) { mov1.DefaultLogSet(o.(*mov1.LogSet)) },
			GoOnly:  []string{"spec.rootPassword", "spec.shardReplicas"},
		},
		{
			// The reclaim policy, and the CA Secret's key.
			Minimal: obj("BucketClaim", "data", "{s3: {endpoint: 'https://s3', bucket: mo-data, region: r, caSecret: {name: ca}}}"),
			Typed:   &mov1.BucketClaim{},
			Default: func(o client.Object) { mov1.DefaultBucketClaim(o.(*mov1.BucketClaim)) },
		},
		{
			// The Backup's deletion policy and the timeout.
			Minimal: obj("BackupJob", "daily", "{cluster: mo, destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r}}}"),
			Typed:   &mov1.BackupJob{},
			Default: func(o client.Object) { mov1.DefaultBackupJob(o.(*mov1.BackupJob)) },
		},
		{
			// The timeout.
			Minimal: obj("BackupSchedule", "daily", "{schedule: '@daily', cluster: mo, destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r}}, retention: {count: 7}}"),
			Typed:   &mov1.BackupSchedule{},
			Default: func(o client.Object) { mov1.DefaultBackupSchedule(o.(*mov1.BackupSchedule)) },
		},
		{
			// The deletion policy, and the CA Secret's key.
			Minimal: obj("Backup", "daily", "{location: {endpoint: 'https://s3', bucket: backups, region: r, keyPrefix: b/1, caSecret: {name: ca}}}"),
			Typed:   &mov1.Backup{},
			Default: func(o client.Object) { mov1.DefaultBackup(o.(*mov1.Backup)) },
		},
		{
			Minimal: obj("Snapshot", "hourly", "{cluster: mo, account: acc1}"),
			Typed:   &mov1.Snapshot{},
			Default: func(client.Object) {}, // none
		},
		{
			Minimal: obj("SnapshotRestore", "undo", "{snapshot: hourly, overwrite: true}"),
			Typed:   &mov1.SnapshotRestore{},
			Default: func(client.Object) {}, // none
		},
		{
			Minimal: obj("TNSet", "tn", "{logSet: log}"),
			Typed:   &mov1.TNSet{},
			Default: func(o client.Object) { mov1.DefaultTNSet(o.(*mov1.TNSet)) },
		},
		{
			Minimal: obj("CNSet", "cn", "{logSet: log}"),
			Typed:   &mov1.CNSet{},
			Default: func(o client.Object) { mov1.DefaultCNSet(o.(*mov1.CNSet)) },
		},
		{
			Minimal: obj("ProxySet", "proxy", "{logSet: log}"),
			Typed:   &mov1.ProxySet{},
			Default: func(o client.Object) { mov1.DefaultProxySet(o.(*mov1.ProxySet)) },
		},
	})
}

// TestCELRules checks that every CEL rule of the CRDs refuses an object
// that breaks it, with its message.
func TestCELRules(t *testing.T) {
	const ns = "mo-cel"
	c := apiClient(t, ns)
	_, rules := testenv.CRDs(t, crdDir, mov1.GroupVersion.Group)
	f := &testenv.Fixtures{T: t, APIVersion: mov1.GroupVersion.String(), Namespace: ns}
	rule := func(kind, path, message string) testenv.CELRule {
		return testenv.CELRule{Kind: kind, Path: path, Message: message}
	}
	create, change := f.Create, f.Change
	const (
		shared  = "sharedStorage: {fileSystem: {claimName: shared}}"
		s3      = "sharedStorage: {s3: {endpoint: 'https://s3:9000', bucket: data, region: r1}}"
		classIm = "storageClassName is immutable"
	)
	// cluster is a MatrixOneCluster spec with more fields.
	cluster := func(more string) string { return "{" + shared + ", cnGroups: [{name: cn}]" + more + "}" }
	// The storage rules of kind at the field at, whose spec with a
	// storage is spec(storage).
	storage := func(kind, at string, spec func(storage string) string) []testenv.Violation {
		return []testenv.Violation{
			change(rule(kind, at+".storageClassName", classIm), spec("{storageClassName: fast}"), spec("{storageClassName: slow}")),
		}
	}
	name := func(kind, what string) testenv.Violation {
		return create(rule(kind, "", "metadata.name must be a DNS-1035 label of at most 48 characters: it names "+what),
			strings.Repeat("m", 49), "{logSet: log, "+shared+"}")
	}
	logSet := func(more string) string { return "{" + shared + more + "}" }
	s3Path := func(pathStyle bool) string {
		return fmt.Sprintf("sharedStorage: {s3: {endpoint: 'https://s3:9000', bucket: data, region: r1, pathStyle: %t}}", pathStyle)
	}
	s3CA := func(caSecret string) string {
		return "sharedStorage: {s3: {endpoint: 'https://s3:9000', bucket: data, region: r1, caSecret: " + caSecret + "}}"
	}
	set := func(more string) string { return "{logSet: log" + more + "}" }
	claimS3 := func(prefix string) string {
		return "s3: {endpoint: 'https://s3:9000', bucket: data, region: r1, keyPrefix: '" + prefix + "'}"
	}

	backupJob := func(cluster string) string {
		return "{cluster: " + cluster + ", destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r1}}}"
	}
	schedule := func(retention string) string {
		return "{schedule: '@daily', cluster: mo, destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r1}}, retention: " + retention + "}"
	}
	backup := func(cluster, prefix string) string {
		return "{cluster: " + cluster + ", location: {endpoint: 'http://s3', bucket: backups, region: r1, keyPrefix: '" + prefix + "'}}"
	}

	violations := []testenv.Violation{
		name("CNSet", "the Services and the StatefulSet's pods"),
		change(rule("CNSet", "spec.logSet", "logSet is immutable: a CN belongs to one cluster"), set(""), "{logSet: other}"),
		name("LogSet", "the Service and the StatefulSet's pods"),
		create(rule("LogSet", "spec.replicas", "replicas must not be below shardReplicas: each replica of a shard lives on its own store"),
			"", logSet(", replicas: 1, shardReplicas: 2")),
		change(rule("LogSet", "spec.logShards", "logShards is immutable: HAKeeper's bootstrap fixed it"), logSet(", logShards: 1"), logSet(", logShards: 2")),
		change(rule("LogSet", "spec.replicas", "replicas must not be below shardReplicas: each replica of a shard lives on its own store"),
			logSet(", replicas: 4, shardReplicas: 3"), logSet(", replicas: 2, shardReplicas: 3")),
		change(rule("LogSet", "spec.rootPassword", "rootPassword is immutable: MatrixOne read it at its bootstrap"), logSet(", rootPassword: a"), logSet(", rootPassword: b")),
		change(rule("LogSet", "spec.shardReplicas", "shardReplicas is immutable: HAKeeper's bootstrap fixed it"), logSet(", shardReplicas: 1"), logSet(", shardReplicas: 3")),
		create(rule("LogSet", "spec.sharedStorage", "set exactly one of fileSystem, s3 and bucketClaim"), "", "{sharedStorage: {}}"),
		create(rule("LogSet", "spec.sharedStorage", "set exactly one of fileSystem, s3 and bucketClaim"), "",
			"{sharedStorage: {bucketClaim: data, fileSystem: {claimName: shared}}}"),
		change(rule("LogSet", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"),
			"{sharedStorage: {bucketClaim: data}}", "{sharedStorage: {bucketClaim: data2}}"),
		create(rule("LogSet", "spec.sharedStorage.bucketClaimTemplate", "bucketClaimTemplate is the spec of the BucketClaim that bucketClaim names: set bucketClaim"),
			"", "{sharedStorage: {fileSystem: {claimName: shared}, bucketClaimTemplate: {"+claimS3("k")+"}}}"),
		change(rule("LogSet", "spec.sharedStorage.bucketClaimTemplate.s3", "s3 is immutable: the claim's data lives there"),
			"{sharedStorage: {bucketClaim: data, bucketClaimTemplate: {"+claimS3("team/a")+"}}}",
			"{sharedStorage: {bucketClaim: data, bucketClaimTemplate: {"+claimS3("team/b")+"}}}"),
		create(rule("MatrixOneCluster", "spec.sharedStorage.bucketClaimTemplate", "bucketClaimTemplate is the spec of the BucketClaim that bucketClaim names: set bucketClaim"),
			"", "{sharedStorage: {fileSystem: {claimName: shared}, bucketClaimTemplate: {"+claimS3("k")+"}}, cnGroups: [{name: cn}]}"),
		change(rule("MatrixOneCluster", "spec.sharedStorage.bucketClaimTemplate.s3", "s3 is immutable: the claim's data lives there"),
			"{sharedStorage: {bucketClaim: data, bucketClaimTemplate: {"+claimS3("team/a")+"}}, cnGroups: [{name: cn}]}",
			"{sharedStorage: {bucketClaim: data, bucketClaimTemplate: {"+claimS3("team/b")+"}}, cnGroups: [{name: cn}]}"),
		create(rule("BucketClaim", "", "metadata.name must have at most 63 characters: the pods that mount the claim carry it as a label"),
			strings.Repeat("b", 64), "{"+claimS3("k")+"}"),
		change(rule("BucketClaim", "spec.s3", "s3 is immutable: the claim's data lives there"),
			"{"+claimS3("team/a")+"}", "{"+claimS3("team/b")+"}"),
		change(rule("LogSet", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"), logSet(""), "{"+s3+"}"),
		change(rule("LogSet", "spec.restoreFrom", "restoreFrom is immutable: the restore happens at the first start"),
			logSet(", restoreFrom: {backup: b1}"), logSet(", restoreFrom: {backup: b2}")),
		change(rule("LogSet", "spec.restoreFrom", "restoreFrom is set only at creation: a restore never writes into a cluster that holds data"),
			logSet(""), logSet(", restoreFrom: {backup: b1}")),
		change(rule("MatrixOneCluster", "spec.restoreFrom", "restoreFrom is immutable: the restore happens at the first start"),
			cluster(", restoreFrom: {backup: b1}"), cluster(", restoreFrom: {backup: b2}")),
		change(rule("MatrixOneCluster", "spec.restoreFrom", "restoreFrom is set only at creation: a restore never writes into a cluster that holds data"),
			cluster(", restoreFrom: {backup: b1}"), cluster("")),
		create(rule("BackupSchedule", "", "metadata.name must have at most 40 characters: its BackupJobs are named after it"),
			strings.Repeat("s", 41), schedule("{count: 1}")),
		create(rule("BackupSchedule", "spec.retention", "set count, maxAge or both: a schedule with no retention keeps every backup forever"),
			"", schedule("{}")),
		create(rule("BackupJob", "", "metadata.name must have at most 52 characters: the backup pod's Job is named after it"),
			strings.Repeat("j", 53), backupJob("mo")),
		change(rule("BackupJob", "spec", "a BackupJob's spec is immutable: create another job"), backupJob("mo"), backupJob("mo2")),
		change(rule("Backup", "spec.cluster", "cluster is immutable"), backup("mo", "b/1"), backup("mo2", "b/1")),
		change(rule("Backup", "spec.location", "location is immutable: it is where the backup is"), backup("mo", "b/1"), backup("mo", "b/2")),
		create(rule("Backup", "spec.location", "keyPrefix is required: a backup is a directory, never a bucket's root"), "", backup("mo", "")),
		create(rule("BackupJob", "spec.destination", "set exactly one of s3 and volumeClaim"), "", "{cluster: mo, destination: {}}"),
		create(rule("BackupSchedule", "spec.destination", "set exactly one of s3 and volumeClaim"), "",
			"{schedule: '@daily', cluster: mo, destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r1}, volumeClaim: {claimName: b}}, retention: {count: 1}}"),
		change(rule("Backup", "spec.volumeClaim", "volumeClaim is immutable"),
			"{volumeClaim: a, location: {endpoint: 'http://s3', bucket: backups, region: r1, keyPrefix: p}}",
			"{volumeClaim: b, location: {endpoint: 'http://s3', bucket: backups, region: r1, keyPrefix: p}}"),
		create(rule("BackupSchedule", "spec", "set exactly one of destination (physical backups) and snapshot (account snapshots)"),
			"", "{schedule: '@daily', cluster: mo, retention: {count: 1}}"),
		create(rule("BackupSchedule", "spec", "set exactly one of destination (physical backups) and snapshot (account snapshots)"),
			"", "{schedule: '@daily', cluster: mo, destination: {s3: {endpoint: 'http://s3', bucket: backups, region: r1}}, snapshot: {account: a}, retention: {count: 1}}"),
		change(rule("BackupSchedule", "spec", "a schedule takes physical backups or snapshots for life: create another schedule"),
			schedule("{count: 1}"), "{schedule: '@daily', cluster: mo, snapshot: {account: a}, retention: {count: 1}}"),
		create(rule("Snapshot", "", "metadata.name must have at most 64 characters: MatrixOne's snapshot is named after it"),
			strings.Repeat("s", 65), "{cluster: mo, account: acc1}"),
		change(rule("Snapshot", "spec", "a Snapshot's spec is immutable: create another Snapshot"),
			"{cluster: mo, account: acc1}", "{cluster: mo, account: acc2}"),
		change(rule("SnapshotRestore", "spec", "a SnapshotRestore's spec is immutable: create another"),
			"{snapshot: s1, overwrite: true}", "{snapshot: s2, overwrite: true}"),
		create(rule("SnapshotRestore", "spec", "overwrite must be true: a restore replaces the target account's databases with the snapshot's"),
			"", "{snapshot: s1, overwrite: false}"),
		// Each of the S3 fields, one by one: path style and the CA.
		change(rule("LogSet", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"),
			"{"+s3Path(false)+"}", "{"+s3Path(true)+"}"),
		change(rule("LogSet", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"),
			"{"+s3CA("{name: ca}")+"}", "{"+s3CA("{name: ca2}")+"}"),
		create(rule("MatrixOneCluster", "spec.sharedStorage", "set exactly one of fileSystem, s3 and bucketClaim"), "", "{sharedStorage: {}, cnGroups: [{name: cn}]}"),
		change(rule("MatrixOneCluster", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"), cluster(""), "{"+s3+", cnGroups: [{name: cn}]}"),
		change(rule("MatrixOneCluster", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"),
			"{"+s3Path(true)+", cnGroups: [{name: cn}]}", "{"+s3Path(false)+", cnGroups: [{name: cn}]}"),
		change(rule("MatrixOneCluster", "spec.sharedStorage", "sharedStorage is immutable: the data lives there"),
			"{"+s3CA("{name: ca}")+", cnGroups: [{name: cn}]}", "{"+s3CA("{name: ca, key: bundle.pem}")+", cnGroups: [{name: cn}]}"),
		change(rule("MatrixOneCluster", "spec.rootPassword", "rootPassword is immutable: MatrixOne read it at its bootstrap"), cluster(", rootPassword: a"), cluster(", rootPassword: b")),
		change(rule("MatrixOneCluster", "spec.logService.logShards", "logService.logShards is immutable"), cluster(", logService: {logShards: 1}"), cluster(", logService: {logShards: 2}")),
		change(rule("MatrixOneCluster", "spec.logService.replicas", "logService.replicas must not be below logService.shardReplicas: each replica of a shard lives on its own store"),
			cluster(", logService: {replicas: 4, shardReplicas: 3}"), cluster(", logService: {replicas: 2, shardReplicas: 3}")),
		change(rule("MatrixOneCluster", "spec.logService.shardReplicas", "logService.shardReplicas is immutable"), cluster(", logService: {shardReplicas: 1}"), cluster(", logService: {shardReplicas: 3}")),
		create(rule("MatrixOneCluster", "spec.monitoring.podMonitorLabels", "labels under app.kubernetes.io/ are Steward's"),
			"", cluster(", monitoring: {podMonitor: true, podMonitorLabels: {app.kubernetes.io/name: prom}}")),
		name("ProxySet", "the Services and the StatefulSet's pods"),
		change(rule("ProxySet", "spec.logSet", "logSet is immutable: a proxy belongs to one cluster"), set(""), "{logSet: other}"),
		name("TNSet", "the Service and the StatefulSet's pods"),
		change(rule("TNSet", "spec.logSet", "logSet is immutable: a TN belongs to one cluster"), set(""), "{logSet: other}"),
	}
	violations = append(violations, storage("CNSet", "spec.storage", func(s string) string { return set(", storage: " + s) })...)
	violations = append(violations, storage("TNSet", "spec.storage", func(s string) string { return set(", storage: " + s) })...)
	violations = append(violations, storage("LogSet", "spec.storage", func(s string) string { return logSet(", storage: " + s) })...)
	violations = append(violations, storage("MatrixOneCluster", "spec.logService.storage", func(s string) string { return cluster(", logService: {storage: " + s + "}") })...)
	violations = append(violations, storage("MatrixOneCluster", "spec.tn.storage", func(s string) string { return cluster(", tn: {storage: " + s + "}") })...)
	violations = append(violations, storage("MatrixOneCluster", "spec.cnGroups[].storage", func(s string) string {
		return "{" + shared + ", cnGroups: [{name: cn, storage: " + s + "}]}"
	})...)
	testenv.CheckCELRules(t, c, rules, violations)
}
