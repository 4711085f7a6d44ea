package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDialIntoNamespace listens on the loopback of a fresh namespace and
// proves the listener is reachable through DialContext but not from the host.
func TestDialIntoNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	ns := Namespace{Name: fmt.Sprintf("localkube-test-%d", os.Getpid())}
	if err := ns.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete() })
	if _, err := ns.Run("ip", "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	ln := listenIn(t, ns)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = c.Write([]byte("pong"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()

	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s answered from the host namespace; the listener is not isolated", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := ns.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 4)
	if _, err := conn.Read(buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q, %v from the namespace's listener, want pong", buf, err)
	}
}

// listenIn opens a TCP listener on 127.0.0.1 inside ns, from a goroutine
// whose thread enters ns and is never returned to the pool.
func listenIn(t *testing.T, ns Namespace) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(ns.Path())
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.ln
}
