package zkclient_test

import (
	"crypto/sha1" //nolint:gosec // ZooKeeper's digest scheme is SHA-1
	"encoding/base64"
	"testing"

	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// TestSuperDigest checks SuperDigest against the digest as ZooKeeper
// documents it for superDigest: "super:" and base64(SHA-1("super:<password>")).
func TestSuperDigest(t *testing.T) {
	for _, password := range []string{"", "secret", "pâss:wörd with spaces"} {
		sum := sha1.Sum([]byte("super:" + password)) //nolint:gosec // see the import
		want := "super:" + base64.StdEncoding.EncodeToString(sum[:])
		if got := zkclient.SuperDigest(password); got != want {
			t.Errorf("SuperDigest(%q) = %q, want %q", password, got, want)
		}
	}
	if a, b := zkclient.SuperDigest("one"), zkclient.SuperDigest("two"); a == b {
		t.Errorf("SuperDigest(%q) = SuperDigest(%q) = %q, want different digests", "one", "two", a)
	}
}
