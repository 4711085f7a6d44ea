package s3test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/s3"
	"github.com/stewardhq/steward/internal/testenv/realserver"
)

const (
	// Region is every server's region.
	Region = "us-east-1"
	// StartTimeout bounds how long [Start] waits for a server to serve.
	StartTimeout = 60 * time.Second
	// StopTimeout is how long a server has to exit on SIGTERM before it
	// is killed.
	StopTimeout = 5 * time.Second
	// healthPath is the server's health check.
	healthPath = "/health"
	// attempts is how many ports Start tries: a free port may be taken
	// between the moment it is chosen and the server binding it.
	attempts = 3
)

// Server is one running versitygw server, started by [Start].
type Server struct {
	t         testing.TB
	bin       string
	dir       string
	tls       bool
	caPEM     []byte
	accessKey string
	secretKey string

	sup *realserver.Supervisor

	mu   sync.Mutex
	port int
}

// ports hands out the servers' ports, each once per process.
var ports realserver.Ports

// Option changes how [Start] runs a server.
type Option func(*Server)

// WithTLS serves HTTPS, with a certificate for 127.0.0.1 and localhost
// signed by a CA made for the server: [Server.CABundle].
func WithTLS() Option { return func(s *Server) { s.tls = true } }

// Start starts a versitygw server on 127.0.0.1 and waits until it serves
// (its health check answers), at most [StartTimeout]. It is killed on
// t.Cleanup. Start must be called from the test's goroutine; it skips or
// fails the test when servers cannot run here (see the package
// documentation).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	e := prepare()
	if !usable(t, e) {
		return nil
	}
	s := &Server{t: t, bin: e.bin, dir: t.TempDir(), accessKey: "S3TEST" + randomHex(t, 7), secretKey: randomHex(t, 20)}
	s.sup = &realserver.Supervisor{Harness: "s3test", Name: "versitygw", LogPath: s.LogPath()}
	for _, o := range opts {
		o(s)
	}
	if err := os.Mkdir(s.Root(), 0o700); err != nil {
		t.Fatalf("s3test.Start: %v", err)
	}
	if s.tls {
		if err := s.makeCertificates(); err != nil {
			t.Fatalf("s3test.Start: %v", err)
		}
	}
	// Registered after t.TempDir, so it runs before the directory is
	// removed.
	t.Cleanup(s.cleanup)
	start := time.Now()
	var err error
	for range attempts {
		if err = s.start(); err != nil {
			t.Fatalf("s3test.Start: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		err = s.waitServing(ctx)
		cancel()
		if err == nil || !strings.Contains(s.sup.Tail(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("s3test.Start: %v", err)
	}
	t.Logf("s3test: versitygw serving at %s after %s", s.Endpoint(), time.Since(start).Round(time.Millisecond))
	return s
}

// usable skips or fails t when servers cannot run; see the package
// documentation.
func usable(t testing.TB, e environment) bool {
	t.Helper()
	return realserver.Usable(t, "s3test", e.Status)
}

// Endpoint returns the server's URL: http://127.0.0.1:port, https with
// [WithTLS].
func (s *Server) Endpoint() string {
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
}

// Credentials returns the server's root credentials, which may do
// anything.
func (s *Server) Credentials() *s3.Credentials {
	return &s3.Credentials{AccessKeyID: s.accessKey, SecretAccessKey: s.secretKey}
}

// CABundle returns the PEM certificate of the CA that signed the server's
// certificate; nil without [WithTLS].
func (s *Server) CABundle() []byte { return s.caPEM }

// Location returns the location of bucket and prefix on the server, with
// its region, path-style addressing, its root credentials and its CA.
func (s *Server) Location(bucket, prefix string) s3.Location {
	return s3.Location{Endpoint: s.Endpoint(), Region: Region, Bucket: bucket, KeyPrefix: prefix,
		PathStyle: true, Credentials: s.Credentials(), CABundle: s.caPEM}
}

// Root returns the server's POSIX root: each bucket is a directory there,
// each object a file under it.
func (s *Server) Root() string { return filepath.Join(s.dir, "root") }

// LogPath returns the file holding the server's output.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "server.log") }

// start starts the server's process on a new free port and returns at
// once.
func (s *Server) start() error {
	taken, err := ports.Take(1)
	if err != nil {
		return err
	}
	port := taken[0]
	args := []string{
		"--port", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--region", Region,
		"--health", healthPath,
		"--quiet",
	}
	if s.tls {
		args = append(args, "--cert", filepath.Join(s.dir, "tls.crt"), "--key", filepath.Join(s.dir, "tls.key"))
	}
	args = append(args, "posix", s.Root())
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	// Nothing of the test's environment: versitygw reads its settings
	// from VGW_* variables too.
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + s.dir,
		"ROOT_ACCESS_KEY_ID=" + s.accessKey,
		"ROOT_SECRET_ACCESS_KEY=" + s.secretKey,
	}
	s.mu.Lock()
	s.port = port
	s.mu.Unlock()
	// The supervisor gives it a parent-death signal: should the test
	// process die without cleaning up, the server dies with it.
	return s.sup.Start(cmd, s.bin+" "+strings.Join(args, " "))
}

// waitServing waits until the server's health check answers 200, and
// fails at once when its process exits, with the end of its output.
func (s *Server) waitServing(ctx context.Context) error {
	client := s.httpClient()
	defer client.CloseIdleConnections()
	return s.sup.WaitServing(ctx, 100*time.Millisecond, func(ctx context.Context) error { return s.health(ctx, client) })
}

// health asks the server's health check.
func (s *Server) health(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint()+healthPath, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", healthPath, resp.StatusCode)
	}
	return nil
}

// httpClient is a client of the server, trusting its CA.
func (s *Server) httpClient() *http.Client {
	tr := &http.Transport{Proxy: nil}
	if s.caPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.caPEM)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Second}
}

// Stop stops the server: SIGTERM, then, if it has not exited after
// [StopTimeout], SIGKILL. Stopping a server that does not run does
// nothing.
func (s *Server) Stop() { s.sup.Stop(StopTimeout) }

// cleanup stops the server and, when the test failed, logs its output.
func (s *Server) cleanup() {
	s.Stop()
	s.sup.LogIfFailed(s.t)
}

// makeCertificates writes the server's key and certificate (tls.key,
// tls.crt; for 127.0.0.1 and localhost), signed by a new CA whose
// certificate becomes the server's CA bundle.
func (s *Server) makeCertificates() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s3test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "versitygw"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(s.dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// randomHex returns n random bytes in upper-case hex.
func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return strings.ToUpper(hex.EncodeToString(b))
}
