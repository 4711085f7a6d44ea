package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	c := DefaultConfig(t.TempDir())
	c.StateDir = t.TempDir()
	c.RunDir = t.TempDir()
	c.NetNS = fmt.Sprintf("localkube-test-%d", os.Getpid())
	return c
}

func TestPortInUseIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = checkPortFree(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "--api-port") {
		t.Fatalf("got %v, want a port-in-use error that names --api-port", err)
	}
}

func TestStaleClusterIsReported(t *testing.T) {
	c := testConfig(t)
	if err := c.checkStale(); err != nil {
		t.Fatalf("fresh state reported stale: %v", err)
	}
	// A live daemon recorded by an earlier run.
	d := c.Daemon("etcd")
	if _, err := d.Start([]string{"sleep", "30"}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(time.Second) })
	err := c.checkStale()
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "etcd (PID") || !strings.Contains(err.Error(), "localkube down") {
		t.Fatalf("got %v, want ErrStale naming etcd and offering `localkube down`", err)
	}
}

func TestMissingBinaryIsReported(t *testing.T) {
	c := testConfig(t)
	err := c.checkBinaries()
	if err == nil || !strings.Contains(err.Error(), "localkube build") {
		t.Fatalf("got %v, want an error that says to run localkube build", err)
	}
}

// TestDyingComponentShowsItsLog: when a component exits while `up` waits,
// the error names it and carries the tail of its log.
func TestDyingComponentShowsItsLog(t *testing.T) {
	c := testConfig(t)
	u := &upper{Config: c, out: io.Discard}
	err := u.start(component{name: "etcd", hostNetwork: true, argv: func(Config) []string {
		return []string{"sh", "-c", "echo 'listen tcp 127.0.0.1:2379: bind: address already in use'; exit 1"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = u.poll(context.Background(), 10*time.Second, func() error { return errors.New("not yet") })
	var ce *componentError
	if !errors.As(err, &ce) || ce.Component != "etcd" {
		t.Fatalf("got %v, want a componentError for etcd", err)
	}
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), c.Daemon("etcd").LogFile) {
		t.Errorf("error lacks the log tail or the log's path:\n%v", err)
	}
}

// TestSavedStateKeepsPodCapacity: `status` and `down` see the simulated
// nodes' capacity `up` ran with; a state saved before it was recorded
// reads as the default.
func TestSavedStateKeepsPodCapacity(t *testing.T) {
	c := testConfig(t)
	c.SimulatedNodes, c.SimulatedPodCapacity = 2, 2000
	if err := c.saveState(); err != nil {
		t.Fatal(err)
	}
	fresh := DefaultConfig(c.BinDir)
	fresh.StateDir = c.StateDir
	got, _, err := fresh.LoadSaved()
	if err != nil {
		t.Fatal(err)
	}
	if got.SimulatedNodes != 2 || got.SimulatedPodCapacity != 2000 {
		t.Errorf("loaded %d nodes of %d pods, want 2 of 2000", got.SimulatedNodes, got.SimulatedPodCapacity)
	}
	if err := os.WriteFile(c.Path("cluster.json"), []byte(`{"simulatedNodes":2,"apiPort":6443}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err = fresh.LoadSaved(); err != nil || got.SimulatedPodCapacity != DefaultSimulatedPodCapacity {
		t.Errorf("an older state loads a capacity of %d (%v), want %d", got.SimulatedPodCapacity, err, DefaultSimulatedPodCapacity)
	}
}

func TestUpRejectsNoPodCapacity(t *testing.T) {
	c := testConfig(t)
	c.SimulatedNodes, c.SimulatedPodCapacity = 2, 0
	err := c.Up(context.Background(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--simulated-pod-capacity") {
		t.Fatalf("got %v, want an error naming --simulated-pod-capacity", err)
	}
}

// TestOrphanedClusterIsRecognised: a network namespace left by a run whose
// processes are gone is an orphan `up` may clean up; one with a process in
// it, or a live daemon, is not.
func TestOrphanedClusterIsRecognised(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	c := testConfig(t)
	ns := c.Namespace()
	if err := ns.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete() })
	if !errors.Is(c.checkStale(), ErrStale) || !c.orphaned() {
		t.Fatalf("an empty namespace left behind: stale %v, orphaned %v; want both", c.checkStale(), c.orphaned())
	}

	// A process inside the namespace: a cluster still in use.
	d := c.Daemon("kube-proxy")
	if _, err := d.Start(ns.Command("sleep", "30"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(time.Second) })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pids, _ := ns.PIDs(); len(pids) > 0 {
			break // nsenter has entered the namespace
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon never showed in its namespace")
		}
	}
	if c.orphaned() {
		t.Fatal("a namespace with a live daemon in it was called orphaned")
	}
	other := c
	other.StateDir = t.TempDir() // an earlier run's daemons recorded elsewhere
	if other.orphaned() {
		t.Fatal("a namespace with a process in it was called orphaned")
	}
}

// TestLockIsExclusive: while one up or down holds the cluster's lock,
// another fails at once, naming it.
func TestLockIsExclusive(t *testing.T) {
	c := testConfig(t)
	unlock, err := c.lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.lock(); err == nil || !strings.Contains(err.Error(), "another localkube up, down or restart") {
		t.Fatalf("a second lock: %v, want it refused", err)
	}
	unlock()
	again, err := c.lock()
	if err != nil {
		t.Fatalf("the lock after its release: %v", err)
	}
	again()
}
