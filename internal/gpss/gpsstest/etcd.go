package gpsstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// StartEtcd runs a one-member etcd on loopback for the rest of the test and
// returns its client URL. It skips the test when KUBEBUILDER_ASSETS has no
// etcd (make unit sets it), as the envtest integration tests do.
//
// The ports are found free and then handed to etcd, so another process (the
// other test packages run in parallel) can take one in between; an etcd that
// exits before answering is started again on fresh ports, a few times.
func StartEtcd(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no etcd in KUBEBUILDER_ASSETS=%q (run through make unit)", os.Getenv("KUBEBUILDER_ASSETS"))
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var url string
		if url, err = startEtcd(t, bin); err == nil {
			return url
		}
		t.Logf("etcd attempt %d: %v", attempt+1, err)
	}
	t.Fatal(err)
	return ""
}

var errEtcdExited = errors.New("etcd exited before answering")

// startEtcd starts one etcd and waits up to 30s for it to answer. The process
// lives until the test ends, unless it exited (errEtcdExited).
func startEtcd(t testing.TB, bin string) (string, error) {
	client, peer := freePort(t), freePort(t)
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--data-dir", t.TempDir(), "--name", "test",
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "test="+peerURL, "--log-level", "error")
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start etcd: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, "health")
		cancel()
		if err == nil {
			return clientURL, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("%w (client %s, peer %s): %w", errEtcdExited, clientURL, peerURL, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s did not answer in 30s: %v", clientURL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("etcd: %s", p)
	return len(p), nil
}
