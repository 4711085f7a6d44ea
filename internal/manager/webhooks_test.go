package manager

import (
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/util/cert"
)

// TestServingCheck runs the webhooks' readiness check against a TLS server
// on loopback: Ready only when the server answers with a certificate the
// directory's CA verifies for the webhook Service's name.
func TestServingCheck(t *testing.T) {
	const service, namespace = "steward-webhook", "steward-system"
	good := newServingCert(t, service+"."+namespace+".svc")
	other := newServingCert(t, service+"."+namespace+".svc")
	wrongName := newServingCert(t, "elsewhere."+namespace+".svc")

	for _, tc := range []struct {
		name    string
		serves  *servingCert // nil: nothing listens
		ca      []byte       // ca.crt in the certificate directory; nil: none
		wantErr string       // empty: Ready
	}{
		{name: "a certificate the CA verifies for the Service", serves: good, ca: good.ca},
		{name: "nothing listening", ca: good.ca, wantErr: "connection refused"},
		{name: "a certificate of another CA", serves: other, ca: good.ca, wantErr: "unknown authority"},
		{name: "a certificate for another name", serves: wrongName, ca: wrongName.ca, wantErr: "not " + service},
		{name: "no CA file: the system roots do not know a private CA", serves: good, wantErr: "unknown authority"},
		{name: "a CA file without a certificate", serves: good, ca: []byte("garbage"), wantErr: "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.ca != nil {
				if err := os.WriteFile(filepath.Join(dir, caCertKey), tc.ca, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			port := freePort(t)
			if tc.serves != nil {
				port = tc.serves.serve(t)
			}
			check := servingCheck(WebhookOptions{Port: port, CertDir: dir, ServiceName: service, Namespace: namespace})
			err := check(httptest.NewRequest(http.MethodGet, "/readyz", http.NoBody))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("check() = %v, want Ready", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("check() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// servingCert is a serving certificate and the CA that signed it.
type servingCert struct {
	pair tls.Certificate
	ca   []byte
}

func newServingCert(t *testing.T, host string) *servingCert {
	t.Helper()
	// The leaf first, then the CA that signed it.
	chain, key, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(chain, key)
	if err != nil {
		t.Fatal(err)
	}
	_, rest := pem.Decode(chain)
	return &servingCert{pair: pair, ca: rest}
}

// serve answers TLS handshakes with the certificate on a loopback port
// until the test ends, and returns the port.
func (c *servingCert) serve(t *testing.T) int {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{c.pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			_ = conn.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}
