package gpsstest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stewardhq/steward/internal/gpss/simulator"
)

// Simulator is a GPSS simulator instance running in the test process, on
// loopback, until Stop or the end of the test.
type Simulator struct {
	Name                  string
	GRPCAddr, GpfdistAddr string
	stop                  func()
}

// RunSimulator starts instance name of cluster clusterID on the etcd at
// etcd (StartEtcd), with knobs.
func RunSimulator(t testing.TB, etcd, clusterID, name string, knobs simulator.Knobs) *Simulator {
	t.Helper()
	cfg := fmt.Sprintf(`{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Id":%q,"Etcd":{"Endpoints":[%q]}}}`, clusterID, etcd)
	s, err := simulator.New([]byte(cfg), name, knobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	g, f := listen(t), listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, g, f) }()
	var once sync.Once
	sim := &Simulator{Name: name, GRPCAddr: g.Addr().String(), GpfdistAddr: f.Addr().String()}
	sim.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("simulator %s: %v", name, err)
			}
		})
	}
	t.Cleanup(sim.stop)
	return sim
}

// Stop stops the instance (its etcd lease is revoked: it is gone at once).
func (s *Simulator) Stop() { s.stop() }

// Dial returns a gRPC connection to addr, closed at the end of the test.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// JobOwners is simulator.JobOwners on the etcd at etcd: which instance runs
// each job, by job name.
func JobOwners(t testing.TB, etcd, clusterID string) map[string]string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	owners, err := simulator.JobOwners(t.Context(), c, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	return owners
}
