package forward

import (
	"bufio"
	"context"
	"net"
	"testing"
)

// TestRelay relays through Serve to an echo server on loopback, with a
// dialer that records the target it was asked for.
func TestRelay(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("echo " + line))
				c.Close()
			}()
		}
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked := make(chan string, 1)
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		asked <- address
		var d net.Dialer
		return d.DialContext(ctx, network, echo.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, front, "10.201.0.1:6443", dial) }()

	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || reply != "echo hello\n" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	if got := <-asked; got != "10.201.0.1:6443" {
		t.Errorf("dialed %s, want the target", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve returned %v after cancel", err)
	}
}
