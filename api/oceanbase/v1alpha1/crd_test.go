package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

var crdDir = filepath.Join("..", "..", "..", "config", "crd", "bases")

// server is a real kube-apiserver with the generated CRDs installed.
var server = testenv.APIServer{CRDDirectoryPaths: []string{crdDir}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

// apiClient returns a client of the shared API server and creates the
// namespace ns.
func apiClient(t *testing.T, ns string) client.Client {
	return server.NamespacedClient(t, ns, obv1.AddToScheme)
}

// TestDefaults checks that the CRDs' schema defaults and Default and
// DefaultTenant agree on a minimal object of every kind (so the zone's
// replicas, written in both, cannot drift apart).
func TestDefaults(t *testing.T) {
	const ns = "ob-defaults"
	c := apiClient(t, ns)
	obj := func(kind, name, spec string) *unstructured.Unstructured {
		return testenv.Object(t, obv1.GroupVersion.String(), kind, ns, name, spec)
	}
	none := func(client.Object) {} // the kind has no defaults in Go, and none in its schema
	kinds, _ := testenv.CRDs(t, crdDir, obv1.GroupVersion.Group)
	testenv.CheckDefaults(t, c, kinds, []testenv.Defaults{
		{
			Minimal: obj("OBCluster", "ob", "{image: ob:4, zones: [{name: z1}, {name: z2, replicas: 3}]}"),
			Typed:   &obv1.OBCluster{},
			Default: func(o client.Object) { obv1.Default(o.(*obv1.OBCluster)) },
			// From metadata.name.
			GoOnly: []string{"spec.clusterName", "spec.credentials.operator", "spec.credentials.root"},
		},
		{
			Minimal: obj("OBTenant", "t", "{cluster: ob, unit: {maxCPU: 1, memorySize: 5Gi}, zones: [{name: z1}]}"),
			Typed:   &obv1.OBTenant{},
			Default: func(o client.Object) { obv1.DefaultTenant(o.(*obv1.OBTenant)) },
			// From metadata.name, and minCPU from maxCPU.
			GoOnly: []string{"spec.rootPassword", "spec.tenantName", "spec.unit.minCPU"},
		},
		{Minimal: obj("OBParameter", "p", "{cluster: ob, name: p, value: v}"), Typed: &obv1.OBParameter{}, Default: none},
		{
			Minimal: obj("OBTenantBackupPolicy", "bp", "{tenant: t1, archive: {destination: {path: 'file:///b/a'}}, dataBackup: {destination: {path: 'file:///b/d'}, fullSchedule: '@daily'}}"),
			Typed:   &obv1.OBTenantBackupPolicy{},
			Default: func(o client.Object) { obv1.DefaultBackupPolicy(o.(*obv1.OBTenantBackupPolicy)) },
		},
		{
			Minimal: obj("OBTenantBackup", "b", "{tenant: t1}"),
			Typed:   &obv1.OBTenantBackup{},
			Default: func(o client.Object) { obv1.DefaultBackup(o.(*obv1.OBTenantBackup)) },
		},
		{
			Minimal: obj("OBTenantRestore", "r", "{tenant: t1, source: {data: {path: 'file:///b/d'}, archive: {path: 'file:///b/a'}}}"),
			Typed:   &obv1.OBTenantRestore{},
			Default: func(o client.Object) { obv1.DefaultRestoreSource(&o.(*obv1.OBTenantRestore).Spec.Source) },
		},
		{Minimal: obj("OBTenantOperation", "o", "{type: Failover, failover: {standby: t1}}"), Typed: &obv1.OBTenantOperation{}, Default: none},
		{Minimal: obj("OBZone", "ob-z1", "{cluster: ob, zone: z1}"), Typed: &obv1.OBZone{}, Default: none},
		{Minimal: obj("OBServer", "ob-z1-0", "{cluster: ob, zone: z1, ordinal: 0}"), Typed: &obv1.OBServer{}, Default: none},
	})
}

// TestCELRules checks that every CEL rule of the CRDs refuses an object
// that breaks it, with its message.
func TestCELRules(t *testing.T) {
	const ns = "ob-cel"
	c := apiClient(t, ns)
	_, rules := testenv.CRDs(t, crdDir, obv1.GroupVersion.Group)
	f := &testenv.Fixtures{T: t, APIVersion: obv1.GroupVersion.String(), Namespace: ns}
	rule := func(kind, path, message string) testenv.CELRule {
		return testenv.CELRule{Kind: kind, Path: path, Message: message}
	}
	create, change, obj := f.Create, f.Change, f.Object
	// cluster is an OBCluster spec with zones and any more fields.
	cluster := func(zones, more string) string { return "{image: ob:4, zones: " + zones + more + "}" }
	param := "cluster: ob, name: p, value: v"
	tenant := "cluster: ob, unit: {maxCPU: 1, memorySize: 5Gi}, zones: [{name: z1}]"
	// policy is an OBTenantBackupPolicy spec with the archive and data
	// destinations and the data backup's schedules given.
	policy := func(archive, data, schedules string) string {
		return "{tenant: t1, archive: {destination: " + archive + "}, dataBackup: {destination: " + data + ", " + schedules + "}}"
	}
	file := func(p string) string { return "{path: 'file:///b/" + p + "'}" }
	s3 := "{path: 's3://b/d', s3: {endpoint: gw, region: r, credentialsSecret: k}}"
	daily := "fullSchedule: '@daily'"
	// restore is a restore source with the data destination and the
	// fields given.
	restore := func(data, more string) string { return "{data: " + data + ", archive: " + file("a") + more + "}" }
	badS3 := strings.Replace(s3, "s3://b/d", "file:///b/d", 1)
	restoring := func(src string) string { return "{" + tenant + ", source: {restore: " + src + "}}" }

	testenv.CheckCELRules(t, c, rules, []testenv.Violation{
		create(rule("OBCluster", "", "metadata.name must be a DNS-1035 label of at most 40 characters: it names the zones' StatefulSets, their pods and the servers' Services"),
			strings.Repeat("o", 41), cluster("[{name: z1}]", "")),
		change(rule("OBCluster", "spec.clusterID", "clusterID is immutable"),
			cluster("[{name: z1}]", ", clusterID: 1"), cluster("[{name: z1}]", ", clusterID: 2")),
		change(rule("OBCluster", "spec.clusterName", "clusterName is immutable"),
			cluster("[{name: z1}]", ", clusterName: a"), cluster("[{name: z1}]", ", clusterName: b")),
		change(rule("OBCluster", "spec.credentials.operator", "credentials.operator is immutable"),
			cluster("[{name: z1}]", ", credentials: {operator: a}"), cluster("[{name: z1}]", ", credentials: {operator: b}")),
		change(rule("OBCluster", "spec.credentials.root", "credentials.root is immutable"),
			cluster("[{name: z1}]", ", credentials: {root: a}"), cluster("[{name: z1}]", ", credentials: {root: b}")),
		change(rule("OBCluster", "spec.storage.storageClassName", "storageClassName is immutable"),
			cluster("[{name: z1}]", ", storage: {storageClassName: fast}"), cluster("[{name: z1}]", ", storage: {storageClassName: slow}")),
		change(rule("OBCluster", "spec.zones", "an edit may add zones or remove zones, not both: the sys tenant's locality changes one zone at a time; add the new zones first, then remove the old ones"),
			cluster("[{name: z1}, {name: z2}]", ""), cluster("[{name: z1}, {name: z3}]", "")),
		change(rule("OBCluster", "spec.zones", "at least one of the current zones must stay"),
			cluster("[{name: z1}]", ""), cluster("[{name: z2}]", "")),
		change(rule("OBCluster", "spec.zones", "an edit that removes several zones must keep a majority of the current zones (5 to 3, not 3 to 1): remove them one at a time"),
			cluster("[{name: z1}, {name: z2}, {name: z3}]", ""), cluster("[{name: z1}]", "")),

		create(rule("OBParameter", "", "set at most one of spec.zone and spec.server"), "", "{"+param+", zone: z1, server: '10.0.0.1:2882'}"),
		change(rule("OBParameter", "spec.cluster", "cluster is immutable"), "{"+param+"}", "{cluster: ob2, name: p, value: v}"),
		change(rule("OBParameter", "spec.name", "name is immutable"), "{"+param+"}", "{cluster: ob, name: q, value: v}"),
		change(rule("OBParameter", "spec.server", "server is immutable"), "{"+param+", server: '10.0.0.1:2882'}", "{"+param+", server: '10.0.0.2:2882'}"),
		change(rule("OBParameter", "spec.zone", "zone is immutable"), "{"+param+", zone: z1}", "{"+param+", zone: z2}"),
		change(rule("OBParameter", "spec.tenant", "tenant is immutable"), "{"+param+", tenant: a}", "{"+param+", tenant: b}"),
		create(rule("OBParameter", "", "a tenant's parameter is set for the tenant: spec.tenant excludes spec.zone and spec.server"), "",
			"{"+param+", tenant: a, server: '10.0.0.1:2882'}"),

		create(rule("OBServer", "", "metadata.name must be <spec.cluster>-<spec.zone>-<spec.ordinal>, the observer's pod"),
			"ob-z2-0", "{cluster: ob, zone: z1, ordinal: 0}"),
		create(rule("OBServer", "", "metadata.name must be <spec.cluster>-<spec.zone>-<spec.ordinal>: its ordinal is not spec.ordinal"),
			"ob-z1-1", "{cluster: ob, zone: z1, ordinal: 0}"),
		{
			Rule: rule("OBServer", "spec", "spec is the operator's and immutable"),
			Old:  obj("OBServer", "ob-z1-0", "{cluster: ob, zone: z1, ordinal: 0}"),
			New:  obj("OBServer", "ob-z1-0", "{cluster: ob, zone: z1, ordinal: 1}"),
		},

		change(rule("OBTenant", "spec.charset", "charset is immutable"), "{"+tenant+", charset: utf8mb4}", "{"+tenant+", charset: gbk}"),
		change(rule("OBTenant", "spec.cluster", "cluster is immutable"), "{"+tenant+"}", "{"+strings.Replace(tenant, "cluster: ob", "cluster: ob2", 1)+"}"),
		change(rule("OBTenant", "spec.rootPassword", "rootPassword is immutable"), "{"+tenant+", rootPassword: a}", "{"+tenant+", rootPassword: b}"),
		change(rule("OBTenant", "spec.tenantName", "tenantName is immutable"), "{"+tenant+", tenantName: a}", "{"+tenant+", tenantName: b}"),
		change(rule("OBTenant", "spec", "source is immutable"), "{"+tenant+"}", restoring(restore(file("d"), ""))),
		change(rule("OBTenant", "spec.source", "source is immutable"), restoring(restore(file("d"), "")), restoring(restore(file("e"), ""))),
		create(rule("OBTenant", "spec.source", "set exactly one of restore and primary"), "", "{"+tenant+", source: {}}"),
		create(rule("OBTenant", "spec.variables[].name", "ob_tcp_invited_nodes is spec.connectWhiteList"), "",
			"{"+tenant+", variables: [{name: ob_tcp_invited_nodes, value: '%'}]}"),
		create(rule("OBTenant", "spec.source.restore.until", "exactly one of time and scn"), "", restoring(restore(file("d"), ", until: {}"))),
		create(rule("OBTenant", "spec.source.restore", "replayArchive needs role Standby"), "", restoring(restore(file("d"), ", replayArchive: true"))),
		create(rule("OBTenant", "spec.source.restore.data", "s3 is set exactly when path is an s3:// path"), "", restoring(restore(badS3, ""))),
		create(rule("OBTenant", "spec.source.restore.archive", "s3 is set exactly when path is an s3:// path"), "",
			restoring("{data: "+file("d")+", archive: "+badS3+"}")),

		create(rule("OBTenantBackupPolicy", "spec", "dataBackup.incrementalSchedule must differ from fullSchedule"), "",
			policy(file("a"), file("d"), "fullSchedule: '@daily', incrementalSchedule: '@daily'")),
		change(rule("OBTenantBackupPolicy", "spec.tenant", "tenant is immutable"),
			policy(file("a"), file("d"), daily), strings.Replace(policy(file("a"), file("d"), daily), "tenant: t1", "tenant: t2", 1)),
		create(rule("OBTenantBackupPolicy", "spec.archive.destination", "s3 is set exactly when path is an s3:// path"), "",
			policy("{path: 's3://b/a'}", file("d"), daily)),
		create(rule("OBTenantBackupPolicy", "spec.dataBackup.destination", "s3 is set exactly when path is an s3:// path"), "",
			policy(file("a"), strings.Replace(s3, "s3://b/d", "file:///b/d", 1), daily)),
		create(rule("OBTenantBackupPolicy", "spec.archive.destination", "s3 is set exactly when path is an s3:// path"), "",
			policy(strings.Replace(s3, "s3://b/d", "file:///b/a", 1), s3, daily)),

		change(rule("OBTenantBackup", "spec.tenant", "tenant is immutable"), "{tenant: t1}", "{tenant: t2}"),
		change(rule("OBTenantBackup", "spec.type", "type is immutable"), "{tenant: t1, type: Full}", "{tenant: t1, type: Incremental}"),
		change(rule("OBTenantBackup", "spec", "plusArchivelog is immutable"), "{tenant: t1}", "{tenant: t1, plusArchivelog: true}"),
		change(rule("OBTenantBackup", "spec", "encryptionSecret is immutable"), "{tenant: t1}", "{tenant: t1, encryptionSecret: s}"),
		change(rule("OBTenantBackup", "spec", "a canceled backup stays canceled"), "{tenant: t1, cancel: true}", "{tenant: t1}"),

		change(rule("OBTenantRestore", "spec", "tenant and source are immutable"), "{tenant: t1, source: "+restore(file("d"), "")+"}",
			"{tenant: t1, source: "+restore(file("d"), ", until: {scn: 5}")+"}"),
		create(rule("OBTenantRestore", "spec.source.until", "exactly one of time and scn"), "",
			"{tenant: t1, source: "+restore(file("d"), ", until: {scn: 5, time: '2026-01-01T00:00:00Z'}")+"}"),
		create(rule("OBTenantRestore", "spec.source.data", "s3 is set exactly when path is an s3:// path"), "", "{tenant: t1, source: "+restore(badS3, "")+"}"),
		create(rule("OBTenantRestore", "spec.source", "replayArchive needs role Standby"), "",
			"{tenant: t1, source: "+restore(file("d"), ", role: Primary, replayArchive: true")+"}"),
		create(rule("OBTenantRestore", "spec.source.archive", "s3 is set exactly when path is an s3:// path"), "",
			"{tenant: t1, source: {data: "+file("d")+", archive: "+badS3+"}}"),

		create(rule("OBTenantOperation", "spec", "set the field of the operation's type, and only it"), "",
			"{type: Failover, switchover: {primary: a, standby: b}}"),
		change(rule("OBTenantOperation", "spec.type", "an operation is immutable"),
			"{type: Failover, failover: {standby: a}}", "{type: ReplayLog, failover: {standby: a}}"),
		change(rule("OBTenantOperation", "spec.switchover", "an operation is immutable"),
			"{type: Switchover, switchover: {primary: a, standby: b}}", "{type: Switchover, switchover: {primary: b, standby: a}}"),
		change(rule("OBTenantOperation", "spec.failover", "an operation is immutable"),
			"{type: Failover, failover: {standby: a}}", "{type: Failover, failover: {standby: b}}"),
		change(rule("OBTenantOperation", "spec.changePassword", "an operation is immutable"),
			"{type: ChangePassword, changePassword: {tenant: a, secret: s}}", "{type: ChangePassword, changePassword: {tenant: a, secret: t}}"),
		change(rule("OBTenantOperation", "spec.replayLog", "an operation is immutable"),
			"{type: ReplayLog, replayLog: {tenant: a}}", "{type: ReplayLog, replayLog: {tenant: a, until: {scn: 5}}}"),
		create(rule("OBTenantOperation", "spec.replayLog.until", "exactly one of time and scn"), "",
			"{type: ReplayLog, replayLog: {tenant: a, until: {}}}"),
		change(rule("OBTenantOperation", "spec.upgrade", "an operation is immutable"),
			"{type: Upgrade, upgrade: {tenant: a}}", "{type: Upgrade, upgrade: {tenant: b}}"),

		create(rule("OBZone", "", "metadata.name must be <spec.cluster>-<spec.zone>"), "ob-z2", "{cluster: ob, zone: z1}"),
		{
			Rule: rule("OBZone", "spec", "spec is the operator's and immutable"),
			Old:  obj("OBZone", "ob-z1", "{cluster: ob, zone: z1}"),
			New:  obj("OBZone", "ob-z1", "{cluster: ob, zone: z2}"),
		},
	})
}
