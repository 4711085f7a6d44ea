//go:build bench

package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAudit needs no cluster: the operator's requests between two
// offsets of the log group by verb, resource and answer, with the shapes
// of the names and the Events' reasons; other users' are left out.
func TestReadAudit(t *testing.T) {
	lines := []string{
		`{"verb":"get","requestURI":"/api/v1/namespaces/ns/secrets/zk-1-credentials","user":{"username":"system:serviceaccount:steward-system:steward"},"objectRef":{"resource":"secrets","name":"zk-1-credentials"},"responseStatus":{"code":404,"reason":"NotFound","message":"secrets \"zk-1-credentials\" not found"}}`,
		`{"verb":"create","requestURI":"/apis/events.k8s.io/v1/namespaces/ns/events","user":{"username":"system:serviceaccount:steward-system:steward"},"objectRef":{"resource":"events","apiGroup":"events.k8s.io","name":"zk-12.18eb1aa15941b41a"},"requestObject":{"reason":"Creating"},"responseStatus":{"code":409,"reason":"AlreadyExists"}}`,
		`{"verb":"patch","requestURI":"/apis/apps/v1/namespaces/ns/statefulsets/zk-2?dryRun=All&fieldManager=steward","user":{"username":"system:serviceaccount:steward-system:steward"},"objectRef":{"resource":"statefulsets","apiGroup":"apps","name":"zk-2"},"responseStatus":{"code":201}}`,
		`{"verb":"get","requestURI":"/api/v1/namespaces/ns/secrets/zk-2-credentials","user":{"username":"system:serviceaccount:steward-system:steward"},"objectRef":{"resource":"secrets","name":"zk-2-credentials"},"responseStatus":{"code":404,"reason":"NotFound"}}`,
		`{"verb":"delete","requestURI":"/api/v1/namespaces/ns/pods/zk-2-0","user":{"username":"system:serviceaccount:kube-system:generic-garbage-collector"},"objectRef":{"resource":"pods","name":"zk-2-0"},"responseStatus":{"code":404}}`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	skipped := "not json, before the window\n"
	if err := os.WriteFile(path, []byte(skipped+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCALE_AUDIT_LOG", path)
	rows, ok := readAudit(int64(len(skipped)), auditSize(), "zk")
	if !ok {
		t.Fatal("the log was not read")
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.verb+" "+r.resource+" "+r.reason] = r.topNames(3)
	}
	want := map[string]string{
		"get secrets NotFound":                      "<cluster>-credentials×2",
		"create events.events.k8s.io AlreadyExists": "<cluster>.<id> (Creating)×1",
		"patch (dry run) statefulsets.apps ":        "<cluster>×1",
	}
	if len(got) != len(want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: names %q, want %q", k, got[k], v)
		}
	}
	if _, ok := readAudit(10, 5, "zk"); ok {
		t.Error("a log that shrank (rotated) was read")
	}
}
