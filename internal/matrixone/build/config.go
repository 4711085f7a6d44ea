package build

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Role is a MatrixOne service, as mo-service's service-type names it.
type Role string

// The roles.
const (
	RoleLog   Role = "LOG"
	RoleTN    Role = "TN"
	RoleCN    Role = "CN"
	RoleProxy Role = "PROXY"
)

// Paths in a MatrixOne pod.
const (
	// DataDir is where a pod's volume is mounted; mo-service's data-dir
	// and its LOCAL file service live under it.
	DataDir = "/var/lib/matrixone"
	// SharedMountPath is where a shared filesystem is mounted in every pod
	// of a cluster whose shared storage is a filesystem.
	SharedMountPath = "/var/lib/matrixone-shared"
)

// Ports. TN and CN take four consecutive ports from their port base
// (MatrixOne's port-base: service, logtail or pipeline, lock, query).
const (
	LogRaftPort    = 32000
	LogServicePort = 32001
	LogGossipPort  = 32002
	TNPortBase     = 41010
	SQLPort        = 6001
	CNPortBase     = 6002
	// MetricsPort serves every role's Prometheus metrics (MatrixOne's
	// status server, observability.statusPort, at GET /metrics).
	MetricsPort = 7001
)

// SharedStorage is where TN and CN keep table data: MatrixOne's SHARED file
// service, with ETL (metrics and logs, when enabled) beside it.
type SharedStorage struct {
	// S3 is an S3-compatible object store; nil for a shared filesystem
	// mounted at SharedMountPath in every pod (one POSIX filesystem, such
	// as a volume on one node: MatrixOne writes each object once under a
	// unique name, so processes can share it).
	S3 *S3
}

// S3 is an object-storage location. Credentials reach mo-service as the
// AWS SDK's environment variables, never through the configuration.
//
// no-default-credentials is not rendered, on purpose. MatrixOne 1.2.4
// ignores it in a [[fileservice]] table: both S3 backends build the store
// with NewS3FS(..., noDefaultCredential=false), which overwrites the
// setting (pkg/fileservice/config.go, newS3FileService and
// newMinioFileService; s3_fs.go:73). Were it honored, it would refuse
// the environment's keys ("no valid credentials", aws_sdk_v2.go:681),
// since it counts only key-id and key-secret written in the TOML. The
// SDK's chain takes the environment's keys first
// (aws-sdk-go-v2/config's resolveCredentialChain), so with a credentials
// Secret nothing else is asked; without one the pod's own identity is
// walked for, as meant.
type S3 struct {
	Endpoint string
	Bucket   string
	// KeyPrefix is the path under the bucket; SHARED and ETL go below it
	// in data/ and etl/.
	KeyPrefix string
	// Region must be set: without it MatrixOne sends a request to AWS's
	// public endpoint at start to guess one.
	Region string
	// PathStyle addresses the bucket in the URL's path. MatrixOne 1.2.4
	// has no such setting: is-minio, rendered for it, makes its AWS SDK
	// client take the endpoint as given (HostnameImmutable), so the
	// bucket goes in the path (pkg/fileservice/aws_sdk_v2.go:132-146;
	// object_storage_arguments.go reads is-minio). Without it the SDK puts
	// the bucket in the host name, which no in-cluster DNS resolves.
	PathStyle bool
	// CAFile is a PEM CA bundle in the pod, listed in cert-files; "" for
	// none. MatrixOne 1.2.4 adds it to the system's pool but then skips
	// verifying the store's certificate (http_client.go:67-89).
	CAFile string
}

// Memory are the caches of one pod, in bytes.
type Memory struct {
	// LocalCache and SharedCache are the memory caches of the LOCAL and
	// SHARED file services; MetaCache is MatrixOne's object metadata
	// cache, which it would otherwise size from the host's memory (not the
	// pod's).
	LocalCache, SharedCache, MetaCache int64
	// DiskCache is the SHARED file service's disk cache on the pod's
	// volume (TN and CN); 0 leaves it out.
	DiskCache int64
}

const mib = 1 << 20

// MemoryFor sizes the caches from a pod's memory limit (bytes), leaving the
// rest to MatrixOne's work and Go's heap: the SHARED cache an eighth, the
// metadata cache a sixteenth, the LOCAL cache a thirty-second, each at
// least 16 MiB. The log service and the proxy keep no table data, so their
// SHARED cache is the floor. (mo-service's defaults are 512 MiB each and a
// metadata cache of up to 2 GiB from the host's memory: caches alone could
// outgrow a 1 GiB pod's limit.)
func MemoryFor(role Role, limit int64) Memory {
	part := func(div int64) int64 { return max(limit/div, 16*mib) }
	m := Memory{LocalCache: part(32), SharedCache: part(8), MetaCache: part(16)}
	if role == RoleLog || role == RoleProxy {
		m.SharedCache = 16 * mib
	}
	return m
}

// Template is what a role's configuration template is made of.
type Template struct {
	Role Role
	// Host is the address the store advertises (log, TN: the pod's DNS
	// name; CN: its IP), a template such as
	// "${POD_NAME}.mo-log.default.svc"; unused by the proxy.
	Host string
	// HAKeeper are the log stores' service addresses (host:port).
	HAKeeper []string
	Shared   SharedStorage
	Memory   Memory
	// Log is the log service's own part; set for RoleLog only.
	Log *LogTemplate
	// ProxyEnabled tells a CN that its clients come through a proxy.
	ProxyEnabled bool
	// User is the user's TOML, merged under the operator's keys; it must
	// pass CheckUser.
	User string
}

// LogTemplate is the log service's part of its template.
type LogTemplate struct {
	// DeploymentID is the same on every store of a cluster, for life.
	DeploymentID uint64
	// GossipSeeds are the stores' gossip addresses (host:port).
	GossipSeeds []string
	// Shards is the number of log shards (and of TN shards), Replicas
	// the replicas of each; both are fixed at bootstrap.
	Shards, Replicas int
	// InitialMembers are HAKeeper's initial members, "<replica ID>:<store
	// UUID>"; decided once and rendered the same on every start.
	InitialMembers []string
	// Restore makes HAKeeper's bootstrap seed its ID allocators from the
	// backup's hk_data, which the restore copied to RestoreDir of the
	// shared storage (S3 only), read through a file service of its own.
	// MatrixOne reads it only at the bootstrap of new stores (no RESTORED
	// tag on their volume), so it is rendered for life.
	Restore bool
}

// The restore's copy of a backup's HAKeeper data: under RestoreDir of the
// shared storage's prefix, read by the log stores through the file
// service RestoreFileService.
const (
	RestoreDir         = "restore"
	RestoreFileService = "RESTORE"
	HAKeeperDataFile   = "hk_data"
)

// Render returns the role's mo-service configuration template: the user's
// TOML with the operator's keys set over it, encoded as TOML with its keys
// sorted (the same template gives the same text, so its ConfigMap's name is
// stable). The user's strings have every "$" doubled, since mo-agent
// expands ${VAR} in the template; the operator's own values carry the
// variables.
func Render(t Template) (string, error) {
	cfg := map[string]any{}
	if t.User != "" {
		if _, err := toml.Decode(t.User, &cfg); err != nil {
			return "", fmt.Errorf("the user's configuration: %w", err)
		}
		cfg = escapeDollars(cfg).(map[string]any)
	}
	for path, v := range defaults(t.Role) {
		if !has(cfg, path) {
			set(cfg, path, v)
		}
	}
	for path, v := range owned(t) {
		set(cfg, path, v)
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(cfg); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// defaults returns the operator's defaults of role's keys, by dotted
// path: unlike owned keys, a user's TOML may set them.
//
// A TN writes its logs, traces and metrics as files to the ETL storage,
// not through SQL. With MatrixOne's SQL writer (its default), a stopping
// TN's last flush is a LOAD DATA through a CN, which needs the TN that is
// stopping: it waits for the writer's 10 s read timeout, then writes the
// files anyway. That wait made most of a TN restart (SIGTERM to exit
// 12.6–13.3 s, 2.6 s without it; docs/matrixone.md). The files reach the
// same tables through MatrixOne's merge task, which every CN runs each
// 5 minutes, the path a failed SQL write already takes.
func defaults(role Role) map[string]any {
	if role == RoleTN {
		return map[string]any{"observability.disableSqlWriter": true}
	}
	return nil
}

// has reports whether cfg sets the dotted path.
func has(cfg map[string]any, path string) bool {
	var v any = cfg
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[p]; !ok {
			return false
		}
	}
	return true
}

// owned returns the operator's keys of t's role, by dotted path.
func owned(t Template) map[string]any {
	data := DataDir + "/data"
	keys := map[string]any{
		"service-type":                      string(t.Role),
		"data-dir":                          data,
		"fileservice":                       fileServices(t, data),
		"hakeeper-client.service-addresses": t.HAKeeper,
		"metacache.memory-capacity":         bytesString(t.Memory.MetaCache),
		// Prometheus metrics on a fixed port, which the pods and the
		// headless Services name: MatrixOne serves them also when
		// observability.disableMetric keeps them out of its own tables.
		"observability.enableMetricToProm": true,
		"observability.statusPort":         MetricsPort,
	}
	uuid := "${STORE_UUID}"
	switch t.Role {
	case RoleLog:
		l := t.Log
		if l == nil {
			l = &LogTemplate{}
		}
		for k, v := range map[string]any{
			"uuid":                      uuid,
			"deployment-id":             int64(l.DeploymentID),
			"service-host":              t.Host,
			"raft-port":                 LogRaftPort,
			"logservice-port":           LogServicePort,
			"gossip-port":               LogGossipPort,
			"gossip-seed-addresses":     l.GossipSeeds,
			"gossip-allow-self-as-seed": true,
			// Keep a store's data directory its own whatever the pod's
			// host name: the store's UUID already names it.
			"explicit-hostname": "${POD_NAME}",
			// Rendered on every start: HAKeeper's bootstrap is idempotent,
			// and a store outside the members never bootstraps.
			"BootstrapConfig.bootstrap-cluster":         true,
			"BootstrapConfig.num-of-log-shards":         l.Shards,
			"BootstrapConfig.num-of-tn-shards":          l.Shards,
			"BootstrapConfig.num-of-log-shard-replicas": l.Replicas,
			"BootstrapConfig.init-hakeeper-members":     l.InitialMembers,
		} {
			keys["logservice."+k] = v
		}
		if l.Restore && t.Shared.S3 != nil {
			keys["logservice.BootstrapConfig.restore.file-path"] = RestoreFileService + ":" + HAKeeperDataFile
			keys["fileservice"] = append(keys["fileservice"].([]map[string]any),
				map[string]any{"name": RestoreFileService, "backend": "S3", "s3": s3Args(t.Shared.S3, RestoreDir)})
		}
	case RoleTN:
		keys["tn.uuid"] = uuid
		keys["tn.port-base"] = TNPortBase
		keys["tn.service-host"] = t.Host
	case RoleCN:
		keys["cn.uuid"] = uuid
		keys["cn.port-base"] = CNPortBase
		keys["cn.service-host"] = t.Host
		keys["cn.sql-address"] = fmt.Sprintf("%s:%d", t.Host, SQLPort)
		keys["cn.frontend.port"] = SQLPort
		keys["cn.frontend.proxy-enabled"] = t.ProxyEnabled
	case RoleProxy:
		keys["proxy.uuid"] = uuid
		keys["proxy.listen-address"] = fmt.Sprintf("0.0.0.0:%d", SQLPort)
	}
	return keys
}

// fileServices returns the LOCAL, SHARED and ETL file services.
func fileServices(t Template, data string) []map[string]any {
	local := map[string]any{"name": "LOCAL", "backend": "DISK", "data-dir": data + "/local",
		"cache": map[string]any{"memory-capacity": bytesString(t.Memory.LocalCache)}}
	sharedCache := map[string]any{"memory-capacity": bytesString(t.Memory.SharedCache)}
	if t.Memory.DiskCache > 0 {
		sharedCache["disk-capacity"] = bytesString(t.Memory.DiskCache)
		sharedCache["disk-path"] = DataDir + "/disk-cache"
	}
	shared := map[string]any{"name": "SHARED", "cache": sharedCache}
	etl := map[string]any{"name": "ETL"}
	if s3 := t.Shared.S3; s3 != nil {
		shared["backend"], shared["s3"] = "S3", s3Args(s3, "data")
		etl["backend"], etl["s3"] = "S3", s3Args(s3, "etl")
	} else {
		shared["backend"], shared["data-dir"] = "DISK", SharedMountPath+"/data"
		etl["backend"], etl["data-dir"] = "DISK-ETL", SharedMountPath+"/etl"
	}
	return []map[string]any{local, shared, etl}
}

// s3Args are the S3 arguments of a file service at sub of the location.
func s3Args(s3 *S3, sub string) map[string]any {
	// Slashes at the prefix's ends mean nothing, as for Steward's own
	// client (s3.Location.Root): "/team/c1/" holds team/c1/data.
	prefix := strings.Trim(s3.KeyPrefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	a := map[string]any{"endpoint": s3.Endpoint, "bucket": s3.Bucket, "region": s3.Region, "key-prefix": prefix + sub}
	if s3.PathStyle {
		a["is-minio"] = true
	}
	if s3.CAFile != "" {
		a["cert-files"] = []string{s3.CAFile}
	}
	return a
}

// bytesString is a size as MatrixOne's configuration spells it.
func bytesString(n int64) string { return fmt.Sprintf("%dB", n) }

// set sets the dotted path in cfg, making the tables on the way.
func set(cfg map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := cfg[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cfg[p] = next
		}
		cfg = next
	}
	cfg[parts[len(parts)-1]] = v
}

func escapeDollars(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "$", "$$")
	case map[string]any:
		for k, e := range v {
			v[k] = escapeDollars(e)
		}
		return v
	case []map[string]any:
		for i := range v {
			v[i] = escapeDollars(v[i]).(map[string]any)
		}
		return v
	case []any:
		for i := range v {
			v[i] = escapeDollars(v[i])
		}
		return v
	}
	return v
}

// ownedReasons says, by dotted path, why a key is the operator's: a user's
// TOML that sets one (or a table holding one) is rejected. Paths apply to
// the roles in their first element, "" for all.
var ownedReasons = []struct {
	roles  []Role
	path   string
	reason string
}{
	{nil, "service-type", "the set's kind decides it"},
	{nil, "data-dir", "the pod's volume is mounted there"},
	{nil, "fileservice", "the file services follow spec's shared storage and the pod's volume; their caches are sized from the pod's memory"},
	{nil, "hakeeper-client", "the operator points every store at its log service"},
	{nil, "metacache.memory-capacity", "sized from the pod's memory limit"},
	{nil, "observability.enableMetricToProm", "every role serves its Prometheus metrics on the pods' metrics port"},
	{nil, "observability.statusPort", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.uuid", "a log store's identity is kept for life (derived from its pod)"},
	{[]Role{RoleLog}, "logservice.deployment-id", "a log store's identity is kept for life"},
	{[]Role{RoleLog}, "logservice.explicit-hostname", "a log store's identity is kept for life"},
	{[]Role{RoleLog}, "logservice.service-host", "the store's address is its pod's"},
	{[]Role{RoleLog}, "logservice.raft-port", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.logservice-port", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.gossip-port", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.raft-address", "the store's address is its pod's"},
	{[]Role{RoleLog}, "logservice.logservice-address", "the store's address is its pod's"},
	{[]Role{RoleLog}, "logservice.gossip-address", "the store's address is its pod's"},
	{[]Role{RoleLog}, "logservice.gossip-address-v2", "the store's address is its pod's"},
	{[]Role{RoleLog}, "logservice.raft-listen-address", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.logservice-listen-address", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.gossip-listen-address", "the pods' ports are fixed"},
	{[]Role{RoleLog}, "logservice.gossip-seed-addresses", "the seed is the set's gossip Service"},
	{[]Role{RoleLog}, "logservice.gossip-allow-self-as-seed", "the seed is the set's gossip Service"},
	{[]Role{RoleLog}, "logservice.BootstrapConfig", "HAKeeper's bootstrap is decided once by the operator and recorded"},
	{[]Role{RoleTN}, "tn.uuid", "a TN store's identity is kept for life (derived from its pod)"},
	{[]Role{RoleTN}, "tn.port-base", "the pods' ports are fixed"},
	{[]Role{RoleTN}, "tn.service-host", "the store's address is its pod's"},
	{[]Role{RoleTN}, "tn.listen-address", "the pods' ports are fixed"},
	{[]Role{RoleTN}, "tn.service-address", "the store's address is its pod's"},
	{[]Role{RoleTN}, "dn", "write [tn]: [dn] is its old name, and both would configure the same store"},
	{[]Role{RoleCN}, "cn.uuid", "a CN store's identity is derived from its pod"},
	{[]Role{RoleCN}, "cn.port-base", "the pods' ports are fixed"},
	{[]Role{RoleCN}, "cn.service-host", "the store's address is its pod's"},
	{[]Role{RoleCN}, "cn.sql-address", "the store's address is its pod's"},
	{[]Role{RoleCN}, "cn.listen-address", "the pods' ports are fixed"},
	{[]Role{RoleCN}, "cn.service-address", "the store's address is its pod's"},
	{[]Role{RoleCN}, "cn.frontend.port", "the pods' ports are fixed"},
	{[]Role{RoleCN}, "cn.frontend.proxy-enabled", "set when the cluster has a proxy"},
	{[]Role{RoleCN}, "cn.init-work-state", "the operator sets a CN's work state (draining before it goes)"},
	{[]Role{RoleProxy}, "proxy.uuid", "a proxy's identity is derived from its pod"},
	{[]Role{RoleProxy}, "proxy.listen-address", "the pods' ports are fixed"},
}

// OwnedKeyError is a key of the user's TOML that the operator owns.
type OwnedKeyError struct {
	// Key is the dotted path the operator owns that the user set (a
	// table's path when the operator owns all of it).
	Key string
	// Reason says why the operator owns it.
	Reason string
}

func (e *OwnedKeyError) Error() string {
	return fmt.Sprintf("%s is set by the operator: %s", e.Key, e.Reason)
}

// CheckUser checks a user's TOML for role: it must parse (as MatrixOne's
// parser, BurntSushi/toml, reads it) and set no key the operator owns. It
// returns the parse error, or one *OwnedKeyError per owned key or table
// set, sorted by key.
func CheckUser(role Role, user string) []error {
	var cfg map[string]any
	md, err := toml.Decode(user, &cfg)
	if err != nil {
		return []error{fmt.Errorf("not valid TOML: %w", err)}
	}
	var errs []error
	for _, key := range md.Keys() {
		path := key.String()
		for _, o := range ownedReasons {
			if (o.roles == nil || slices.Contains(o.roles, role)) && (path == o.path || strings.HasPrefix(path, o.path+".")) {
				errs = append(errs, &OwnedKeyError{Key: o.path, Reason: o.reason})
				break
			}
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return slices.CompactFunc(errs, func(a, b error) bool {
		var oa, ob *OwnedKeyError
		return errors.As(a, &oa) && errors.As(b, &ob) && oa.Key == ob.Key
	})
}
