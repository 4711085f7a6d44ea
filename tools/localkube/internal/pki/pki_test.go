package pki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

func TestSignedServingCertVerifies(t *testing.T) {
	ca, err := NewAuthority("localkube-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Sign(Request{CommonName: "kube-apiserver", DNSNames: []string{"kubernetes.default.svc"}, IPs: []net.IP{net.ParseIP("10.96.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WritePair(dir, "apiserver", cert, key); err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.CertsFromFile(filepath.Join(dir, "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"kubernetes.default.svc", "10.96.0.1"} {
		if _, err := certs[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots}); err == nil {
		t.Error("certificate verified for a name it was not issued for")
	}
}

func TestServiceAccountKeyPair(t *testing.T) {
	dir := t.TempDir()
	if err := WriteServiceAccountKey(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := keyutil.PrivateKeyFromFile(filepath.Join(dir, "sa.key")); err != nil {
		t.Fatal(err)
	}
	pubs, err := keyutil.PublicKeysFromFile(filepath.Join(dir, "sa.pub"))
	if err != nil || len(pubs) != 1 {
		t.Fatalf("public keys %v, %v", pubs, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "sa.key")); st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v, want 0600", st.Mode().Perm())
	}
}
