package s3test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/s3"
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
	// logTail is how many lines of a server's output a failed test logs.
	logTail = 40
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

	mu   sync.Mutex
	port int
	proc *process // nil when not running
}

// process is one run of a server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	err  error         // its exit status, once done is closed
}

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
		if err == nil || !strings.Contains(s.tail(logTail), "address already in use") {
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
// documentation. It returns whether they can (t.Skipf and t.Fatalf do not
// return, except in this package's tests).
func usable(t testing.TB, e environment) bool {
	t.Helper()
	switch {
	case e.err != nil:
		t.Fatalf("s3test: %v", e.err)
	case e.deferred != "":
		t.Skipf("s3test: no versitygw binary built yet; the tests that need one are deferred to %s (%s), which builds it", e.deferred, DeferEnv)
	case e.skip != "" && os.Getenv("CI") == "true":
		t.Fatalf("s3test: %s (CI=true: failing instead of skipping)", e.skip)
	case e.skip != "":
		t.Skipf("s3test: %s", e.skip)
	default:
		return true
	}
	return false
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
	port, err := freePort()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
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
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// Should the test process die without cleaning up, the server
		// dies with it.
		Pdeathsig: syscall.SIGKILL,
	}
	fmt.Fprintf(logFile, "=== s3test: %s %s at %s\n", s.bin, strings.Join(args, " "), time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting versitygw: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.port, s.proc = port, p
	s.mu.Unlock()
	return nil
}

// freePort returns a port free on 127.0.0.1 now, below the usual
// ephemeral range (32768 and up), so that no outgoing connection takes it
// before the server binds it.
func freePort() (int, error) {
	for range 1000 {
		p := 20000 + mathrand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p, nil
	}
	return 0, errors.New("no free port on 127.0.0.1")
}

// running returns the running process, or nil.
func (s *Server) running() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	select {
	case <-s.proc.done:
		return nil
	default:
		return s.proc
	}
}

// waitServing waits until the server's health check answers 200, and
// fails at once when its process exits, with the end of its output.
func (s *Server) waitServing(ctx context.Context) error {
	client := s.httpClient()
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if s.running() == nil {
			s.mu.Lock()
			exit := "exit status 0"
			if s.proc != nil && s.proc.err != nil {
				exit = s.proc.err.Error()
			}
			s.mu.Unlock()
			return fmt.Errorf("versitygw is not running (%s); its output ends with:\n%s", exit, s.tail(logTail))
		}
		if last = s.health(ctx, client); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("versitygw does not serve (%w): %w", last, ctx.Err())
		case <-tick.C:
		}
	}
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
func (s *Server) Stop() {
	p := s.running()
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(StopTimeout):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// cleanup stops the server and, when the test failed, logs its output.
func (s *Server) cleanup() {
	s.Stop()
	if s.t.Failed() {
		s.t.Logf("s3test: last lines of versitygw's output (%s):\n%s", s.LogPath(), s.tail(logTail))
	}
}

// tail returns the last n lines of the server's output.
func (s *Server) tail(n int) string {
	f, err := os.Open(s.LogPath())
	if err != nil {
		return fmt.Sprintf("(no output: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return "    " + strings.Join(lines, "\n    ")
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
