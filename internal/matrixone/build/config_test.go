package build

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// decode reads a rendered template back, as MatrixOne's parser would.
func decode(t *testing.T, text string) map[string]any {
	t.Helper()
	var cfg map[string]any
	if _, err := toml.Decode(text, &cfg); err != nil {
		t.Fatalf("the template is not TOML: %v\n%s", err, text)
	}
	return cfg
}

// at returns the value at the dotted path of cfg.
func at(t *testing.T, cfg map[string]any, path string) any {
	t.Helper()
	var v any = cfg
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not a table", path, v)
		}
		v = m[p]
	}
	return v
}

// fileService returns the file service named name.
func fileService(t *testing.T, cfg map[string]any, name string) map[string]any {
	t.Helper()
	list, _ := cfg["fileservice"].([]map[string]any)
	for _, fs := range list {
		if fs["name"] == name {
			return fs
		}
	}
	t.Fatalf("no %s file service in %v", name, cfg["fileservice"])
	return nil
}

func logTemplate() Template {
	return Template{
		Role: RoleLog, Host: "${POD_NAME}.mo-log.default.svc",
		HAKeeper: []string{"mo-log-0.mo-log.default.svc:32001"},
		Memory:   MemoryFor(RoleLog, 512*mib),
		Log: &LogTemplate{DeploymentID: 42, GossipSeeds: []string{"mo-log-0.mo-log.default.svc:32002"},
			Shards: 1, Replicas: 1, InitialMembers: []string{"131072:f91489ef-bce2-58cc-b6b1-c5cc5d288b37"}},
		User: "[log]\nlevel = \"debug\"\n[observability]\ndisableTrace = true\nlabel = \"a$b\"\n",
	}
}

func TestRenderLog(t *testing.T) {
	text, err := Render(logTemplate())
	if err != nil {
		t.Fatal(err)
	}
	// service-type is a top-level key: written before any table, or
	// MatrixOne reads it inside the table before it and starts no service.
	if first := strings.SplitN(strings.TrimSpace(text), "\n", 2)[0]; strings.HasPrefix(first, "[") {
		t.Errorf("the template starts with a table (%s); top-level keys must come first:\n%s", first, text)
	}
	cfg := decode(t, text)
	for path, want := range map[string]any{
		"service-type":                                         "LOG",
		"data-dir":                                             "/var/lib/matrixone/data",
		"logservice.uuid":                                      "${STORE_UUID}",
		"logservice.service-host":                              "${POD_NAME}.mo-log.default.svc",
		"logservice.deployment-id":                             int64(42),
		"logservice.explicit-hostname":                         "${POD_NAME}",
		"logservice.raft-port":                                 int64(LogRaftPort),
		"logservice.BootstrapConfig.bootstrap-cluster":         true,
		"logservice.BootstrapConfig.num-of-log-shards":         int64(1),
		"logservice.BootstrapConfig.num-of-tn-shards":          int64(1),
		"logservice.BootstrapConfig.num-of-log-shard-replicas": int64(1),
		"metacache.memory-capacity":                            "33554432B", // 512 MiB / 16
		// The user's keys stay, their "$" doubled for mo-agent.
		"log.level":                  "debug",
		"observability.disableTrace": true,
		"observability.label":        "a$$b",
		// Beside the user's, in the same table: the metrics' port.
		"observability.enableMetricToProm": true,
		"observability.statusPort":         int64(MetricsPort),
	} {
		if got := at(t, cfg, path); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	members := at(t, cfg, "logservice.BootstrapConfig.init-hakeeper-members")
	if !reflect.DeepEqual(members, []any{"131072:f91489ef-bce2-58cc-b6b1-c5cc5d288b37"}) {
		t.Errorf("init-hakeeper-members = %v", members)
	}
	shared := fileService(t, cfg, "SHARED")
	if shared["backend"] != "DISK" || shared["data-dir"] != SharedMountPath+"/data" {
		t.Errorf("SHARED = %v, want DISK on the shared mount", shared)
	}
	if etl := fileService(t, cfg, "ETL"); etl["backend"] != "DISK-ETL" || etl["data-dir"] != SharedMountPath+"/etl" {
		t.Errorf("ETL = %v", etl)
	}
	if local := fileService(t, cfg, "LOCAL"); local["data-dir"] != "/var/lib/matrixone/data/local" {
		t.Errorf("LOCAL = %v", local)
	}
	if c := shared["cache"].(map[string]any); c["memory-capacity"] != "16777216B" || c["disk-capacity"] != nil {
		t.Errorf("a log store's SHARED cache = %v, want the 16 MiB floor and no disk cache", c)
	}

	again, _ := Render(logTemplate())
	if again != text {
		t.Error("the same template rendered twice differs: its ConfigMap would be renamed on every pass")
	}
}

func TestRenderUserCannotOverrideOwnedKeys(t *testing.T) {
	tmpl := logTemplate()
	// CheckUser rejects this at admission; should it get through, the
	// operator's value still wins.
	tmpl.User = "service-type = \"CN\"\n[logservice]\nuuid = \"mine\"\n"
	cfg := decode(t, must(Render(tmpl)))
	if at(t, cfg, "service-type") != "LOG" || at(t, cfg, "logservice.uuid") != "${STORE_UUID}" {
		t.Errorf("owned keys overridden: %v", cfg)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestRenderRoles(t *testing.T) {
	s3 := SharedStorage{S3: &S3{Endpoint: "http://minio:9000", Bucket: "mo", KeyPrefix: "team/c1", Region: "us-east-1"}}
	for _, tc := range []struct {
		name string
		t    Template
		want map[string]any
	}{
		{"TN", Template{Role: RoleTN, Host: "${POD_NAME}.mo-tn.default.svc", Memory: MemoryFor(RoleTN, 1024*mib)}, map[string]any{
			"service-type": "TN", "tn.uuid": "${STORE_UUID}", "tn.port-base": int64(TNPortBase),
			"tn.service-host": "${POD_NAME}.mo-tn.default.svc",
		}},
		{"CN behind a proxy", Template{Role: RoleCN, Host: "${POD_IP}", ProxyEnabled: true}, map[string]any{
			"service-type": "CN", "cn.uuid": "${STORE_UUID}", "cn.port-base": int64(CNPortBase),
			"cn.sql-address": "${POD_IP}:6001", "cn.frontend.port": int64(SQLPort), "cn.frontend.proxy-enabled": true,
		}},
		{"proxy", Template{Role: RoleProxy}, map[string]any{
			"service-type": "PROXY", "proxy.uuid": "${STORE_UUID}", "proxy.listen-address": "0.0.0.0:6001",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := decode(t, must(Render(tc.t)))
			for path, want := range tc.want {
				if got := at(t, cfg, path); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
			if at(t, cfg, "logservice") != nil {
				t.Errorf("a %s template has a [logservice] table", tc.t.Role)
			}
		})
	}

	t.Run("S3 shared storage, disk cache", func(t *testing.T) {
		m := MemoryFor(RoleCN, 2048*mib)
		m.DiskCache = 1 << 30
		cfg := decode(t, must(Render(Template{Role: RoleCN, Host: "${POD_IP}", Shared: s3, Memory: m})))
		shared := fileService(t, cfg, "SHARED")
		wantS3 := map[string]any{"endpoint": "http://minio:9000", "bucket": "mo", "region": "us-east-1", "key-prefix": "team/c1/data"}
		if shared["backend"] != "S3" || !reflect.DeepEqual(shared["s3"], wantS3) {
			t.Errorf("SHARED = %v, want S3 %v", shared, wantS3)
		}
		if etl := fileService(t, cfg, "ETL"); etl["backend"] != "S3" || etl["s3"].(map[string]any)["key-prefix"] != "team/c1/etl" {
			t.Errorf("ETL = %v", etl)
		}
		cache := shared["cache"].(map[string]any)
		if cache["memory-capacity"] != "268435456B" || cache["disk-capacity"] != "1073741824B" || cache["disk-path"] != "/var/lib/matrixone/disk-cache" {
			t.Errorf("SHARED cache = %v", cache)
		}
	})
}

// TestRenderS3 checks the S3 arguments of SHARED and ETL: pathStyle as
// is-minio (MatrixOne's only way to keep the bucket out of the host name),
// a CA bundle as cert-files, and never no-default-credentials, which
// MatrixOne 1.2.4 ignores in a [[fileservice]] table (and would refuse the
// environment's keys with).
func TestRenderS3(t *testing.T) {
	base := S3{Endpoint: "http://versitygw.steward-s3.svc:7070", Bucket: "mo-data", KeyPrefix: "/team/c1/", Region: "us-east-1"}
	for _, tc := range []struct {
		name   string
		modify func(s *S3)
		want   map[string]any // beside endpoint, bucket, region and key-prefix
	}{
		{"virtual-hosted, the system's CAs", func(*S3) {}, map[string]any{}},
		{"path style", func(s *S3) { s.PathStyle = true }, map[string]any{"is-minio": true}},
		{"a CA bundle", func(s *S3) { s.CAFile = S3CAFile }, map[string]any{"cert-files": []any{S3CAFile}}},
		{"both", func(s *S3) { s.PathStyle, s.CAFile = true, S3CAFile },
			map[string]any{"is-minio": true, "cert-files": []any{S3CAFile}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s3 := base
			tc.modify(&s3)
			for _, role := range []Role{RoleLog, RoleTN, RoleCN, RoleProxy} {
				cfg := decode(t, must(Render(Template{Role: role, Shared: SharedStorage{S3: &s3}})))
				for fs, sub := range map[string]string{"SHARED": "data", "ETL": "etl"} {
					svc := fileService(t, cfg, fs)
					want := map[string]any{"endpoint": base.Endpoint, "bucket": "mo-data", "region": "us-east-1", "key-prefix": "team/c1/" + sub}
					maps.Copy(want, tc.want)
					if svc["backend"] != "S3" || !reflect.DeepEqual(svc["s3"], want) {
						t.Errorf("%s's %s = %v, want S3 %v", role, fs, svc, want)
					}
				}
			}
		})
	}
}

// TestTNWritesObservabilityToFiles: a TN's template turns MatrixOne's SQL
// writer off (a stopping TN waited 10 s on its last write through a CN,
// which needed the TN), unless the user's TOML sets it; no other role's
// does.
func TestTNWritesObservabilityToFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Template
		want any
	}{
		{"a TN by default", Template{Role: RoleTN, User: "[observability]\ndisableTrace = false\n"}, true},
		{"a TN whose user wants the SQL writer", Template{Role: RoleTN, User: "[observability]\ndisableSqlWriter = false\n"}, false},
		{"a CN", Template{Role: RoleCN}, nil},
		{"a log store", logTemplate(), nil},
		{"a proxy", Template{Role: RoleProxy}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := decode(t, must(Render(tc.t)))
			var got any
			if o, ok := cfg["observability"].(map[string]any); ok {
				got = o["disableSqlWriter"]
			}
			if got != tc.want {
				t.Errorf("observability.disableSqlWriter = %#v, want %#v", got, tc.want)
			}
			if tc.name == "a TN by default" && at(t, cfg, "observability.disableTrace") != false {
				t.Errorf("the user's observability keys are lost: %v", cfg["observability"])
			}
		})
	}
	if errs := CheckUser(RoleTN, "[observability]\ndisableSqlWriter = false\n"); len(errs) != 0 {
		t.Errorf("a user's disableSqlWriter is refused: %v", errs)
	}
}

func TestMemoryFor(t *testing.T) {
	for _, tc := range []struct {
		role  Role
		limit int64
		want  Memory
	}{
		{RoleCN, 1024 * mib, Memory{LocalCache: 32 * mib, SharedCache: 128 * mib, MetaCache: 64 * mib}},
		{RoleTN, 256 * mib, Memory{LocalCache: 16 * mib, SharedCache: 32 * mib, MetaCache: 16 * mib}},
		{RoleLog, 1024 * mib, Memory{LocalCache: 32 * mib, SharedCache: 16 * mib, MetaCache: 64 * mib}},
		{RoleProxy, 0, Memory{LocalCache: 16 * mib, SharedCache: 16 * mib, MetaCache: 16 * mib}},
	} {
		if got := MemoryFor(tc.role, tc.limit); got != tc.want {
			t.Errorf("MemoryFor(%s, %d MiB) = %+v, want %+v", tc.role, tc.limit/mib, got, tc.want)
		}
	}
}

func TestCheckUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		role Role
		user string
		want []string // the keys reported, or "TOML" for a parse error
	}{
		{"tunables only", RoleCN, "[log]\nlevel = \"info\"\n[cn.frontend]\nlengthOfQueryPrinted = 200\n[limit]\nmemory = \"1GB\"\n", nil},
		{"empty", RoleLog, "", nil},
		{"a log store's identity", RoleLog, "[logservice]\nuuid = \"x\"\ndeployment-id = 7\n", []string{"logservice.deployment-id", "logservice.uuid"}},
		{"the bootstrap, as a whole table", RoleLog, "[logservice.BootstrapConfig]\nnum-of-log-shard-replicas = 3\n",
			[]string{"logservice.BootstrapConfig"}},
		{"log keys mean nothing to a CN", RoleCN, "[logservice]\nuuid = \"x\"\n", nil},
		{"file services", RoleTN, "[[fileservice]]\nname = \"SHARED\"\nbackend = \"MEM\"\n", []string{"fileservice"}},
		{"top-level keys", RoleProxy, "service-type = \"CN\"\ndata-dir = \"/tmp\"\n", []string{"data-dir", "service-type"}},
		{"the old name of [tn]", RoleTN, "[dn]\nuuid = \"x\"\n", []string{"dn"}},
		{"a CN's work state", RoleCN, "[cn]\ninit-work-state = \"Working\"\n", []string{"cn.init-work-state"}},
		{"the metrics' port, not the rest of [observability]", RoleTN, "[observability]\ndisableMetric = true\nstatusPort = 9000\n",
			[]string{"observability.statusPort"}},
		{"not TOML", RoleCN, "[cn\n", []string{"TOML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := CheckUser(tc.role, tc.user)
			var got []string
			for _, err := range errs {
				var owned *OwnedKeyError
				switch {
				case errors.As(err, &owned):
					got = append(got, owned.Key)
					if owned.Reason == "" || !strings.Contains(err.Error(), "is set by the operator: ") {
						t.Errorf("%v: no reason", err)
					}
				case strings.Contains(err.Error(), "not valid TOML"):
					got = append(got, "TOML")
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reported %v, want %v", got, tc.want)
			}
		})
	}
}
