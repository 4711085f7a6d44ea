package manager

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestCertFileWriter follows the rotator's Secret through its life: empty
// as the chart creates it (no files), filled (files written, private),
// unchanged (files left alone), renewed (files replaced), and gone (an
// error, the files kept). The CA is written with them: the readiness
// check verifies the served certificate with it.
func TestCertFileWriter(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "steward-system", Name: "steward-webhook-cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := t.TempDir()
	w := &certFileWriter{reader: c, secret: key, dir: dir}
	files := func() (cert, key string) {
		crt, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
		k, _ := os.ReadFile(filepath.Join(dir, "tls.key"))
		return string(crt), string(k)
	}
	fill := func(cert, key string) {
		t.Helper()
		secret.Data = map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte(key), "ca.crt": []byte("ca")}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}

	if written, err := w.sync(ctx); written || err != nil {
		t.Fatalf("empty Secret: sync() = %v, %v; want false, nil", written, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("empty Secret: the directory holds %d files, want none", len(entries))
	}

	fill("cert-1", "key-1")
	if written, err := w.sync(ctx); !written || err != nil {
		t.Fatalf("filled Secret: sync() = %v, %v; want true, nil", written, err)
	}
	if cert, k := files(); cert != "cert-1" || k != "key-1" {
		t.Fatalf("files = %q, %q; want cert-1, key-1", cert, k)
	}
	info, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("tls.key mode %v, want 0600", perm)
	}

	if written, err := w.sync(ctx); !written || err != nil {
		t.Fatalf("unchanged Secret: sync() = %v, %v; want true, nil", written, err)
	}
	again, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(info, again) {
		t.Error("an unchanged Secret replaced tls.key")
	}

	fill("cert-2", "key-2")
	if written, err := w.sync(ctx); !written || err != nil {
		t.Fatalf("renewed Secret: sync() = %v, %v; want true, nil", written, err)
	}
	if cert, k := files(); cert != "cert-2" || k != "key-2" {
		t.Fatalf("files after renewal = %q, %q; want cert-2, key-2", cert, k)
	}
	if ca, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(ca) != "ca" {
		t.Errorf("ca.crt = %q, want the Secret's", ca)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("the directory holds %d entries, want ca.crt, tls.crt and tls.key only", len(entries))
	}

	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if written, err := w.sync(ctx); written || err == nil {
		t.Errorf("deleted Secret: sync() = %v, %v; want false and an error", written, err)
	}
	if cert, _ := files(); cert != "cert-2" {
		t.Errorf("a failed sync changed tls.crt to %q", cert)
	}
}
