package build

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.toml from Render")

// goldenTemplates are the four roles of a small cluster named mo in
// namespace default: one log store, the shared storage a filesystem.
// images/matrixone/smoke.sh runs real MatrixOne from these very files (its
// addresses and paths moved onto loopback), so what Render writes is what
// MatrixOne is known to start from.
func goldenTemplates() map[string]Template {
	hakeeper := []string{"mo-log-0.mo-log.default.svc:32001"}
	return map[string]Template{
		"log": {Role: RoleLog, Host: "${POD_NAME}.mo-log.default.svc", HAKeeper: hakeeper, Memory: MemoryFor(RoleLog, 384*mib),
			Log: &LogTemplate{DeploymentID: 1, GossipSeeds: []string{"mo-log-0.mo-log.default.svc:32002"}, Shards: 1, Replicas: 1,
				// The store UUID of pod mo-log-0 in namespace default (wire.StoreID).
				InitialMembers: []string{"131072:f91489ef-bce2-58cc-b6b1-c5cc5d288b37"}},
			User: "[observability]\ndisableTrace = true\ndisableMetric = true\n"},
		"tn": {Role: RoleTN, Host: "${POD_NAME}.mo-tn.default.svc", HAKeeper: hakeeper,
			Memory: func() Memory { m := MemoryFor(RoleTN, 768*mib); m.DiskCache = 256 * mib; return m }(),
			User:   "[observability]\ndisableTrace = true\ndisableMetric = true\n"},
		"cn": {Role: RoleCN, Host: "${POD_IP}", HAKeeper: hakeeper, ProxyEnabled: true,
			Memory: func() Memory { m := MemoryFor(RoleCN, 768*mib); m.DiskCache = 256 * mib; return m }(),
			User:   "[observability]\ndisableTrace = true\ndisableMetric = true\n"},
		"proxy": {Role: RoleProxy, HAKeeper: hakeeper, Memory: MemoryFor(RoleProxy, 192*mib),
			User: "[observability]\ndisableTrace = true\ndisableMetric = true\n"},
	}
}

func TestGoldenTemplates(t *testing.T) {
	for name, tmpl := range goldenTemplates() {
		got, err := Render(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".toml")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs from Render's output (go test ./internal/matrixone/build -update rewrites it; then run images/matrixone/smoke.sh):\n%s", path, got)
		}
	}
}
