package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClassifyRealFailures makes real calls that fail in each way and
// checks their class, and that the text stays the same across calls whose
// raw errors differ (local ports, which timer fired).
func TestClassifyRealFailures(t *testing.T) {
	// A listener that accepts and never answers: a hung server.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	// A port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	// A server that closes every connection without answering.
	rude, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rude.Close()
	go func() {
		for {
			conn, err := rude.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()

	get := func(addr string, timeout time.Duration) error {
		client := &http.Client{Timeout: timeout, Transport: &http.Transport{
			DialContext: (&net.Dialer{Timeout: timeout}).DialContext, DisableKeepAlives: true}}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", http.NoBody)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name string
		addr string
		want Class
	}{
		{"hung", hung.Addr().String(), ClassTimeout},
		{"refused", refused, ClassRefused},
		{"closed", rude.Addr().String(), ClassProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var texts []string
			for range 3 {
				err := get(tc.addr, 200*time.Millisecond)
				if got := Classify(err); got != tc.want {
					t.Fatalf("Classify(%v) = %q, want %q", err, got, tc.want)
				}
				texts = append(texts, Describe(err))
			}
			if texts[0] != texts[1] || texts[1] != texts[2] {
				t.Errorf("texts differ between calls: %q", texts)
			}
			if strings.Contains(texts[0], "127.0.0.1") {
				t.Errorf("text %q names an address", texts[0])
			}
		})
	}
}

func TestDescribeKeepsApplicationAnswers(t *testing.T) {
	answer := errors.New(`AdminServer command "stat": not currently serving requests`)
	if got := Describe(fmt.Errorf("stat 10.0.0.7:8080: %w", answer)); got != "stat 10.0.0.7:8080: "+answer.Error() {
		t.Errorf("Describe = %q, want the answer as is", got)
	}
	if Classify(nil) != ClassNone || Describe(nil) != "" {
		t.Error("nil is no error")
	}
	if Classify(ErrPending) != ClassPending {
		t.Error("ErrPending is pending")
	}
	// Names are not looked up here (no traffic leaves loopback): the
	// resolver's and the kernel's errors as they come.
	for _, err := range []error{
		&net.DNSError{Err: "no such host", Name: "zk-0.zk", IsNotFound: true},
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)},
	} {
		if Classify(err) != ClassUnreachable {
			t.Errorf("Classify(%v) = %q, want Unreachable", err, Classify(err))
		}
	}
	if Classify(fmt.Errorf("wrapped: %w", context.DeadlineExceeded)) != ClassTimeout {
		t.Error("a wrapped deadline is a timeout")
	}
}
