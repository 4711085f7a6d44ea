package zkclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseStat parses answers captured from real ZooKeeper 3.8.0 servers
// (capture_test.go regenerates them) and malformed ones.
func TestParseStat(t *testing.T) {
	const version = "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC"
	for _, tc := range []struct {
		name    string
		data    []byte
		want    zkclient.ServerStat
		wantErr string
	}{{
		name: "standalone",
		data: fixture(t, "stat-standalone.json"),
		want: zkclient.ServerStat{Role: zkclient.RoleStandalone, Version: version, NodeCount: 5, Uptime: 1173 * time.Millisecond},
	}, {
		name: "leader",
		data: fixture(t, "stat-leader.json"),
		want: zkclient.ServerStat{Role: zkclient.RoleLeader, Version: version, LastZxid: 0x100000002, NodeCount: 6, Uptime: 1149 * time.Millisecond},
	}, {
		name: "follower with a client",
		data: fixture(t, "stat-follower.json"),
		want: zkclient.ServerStat{Role: zkclient.RoleFollower, Version: version, LastZxid: 0x100000002, Connections: 1, NodeCount: 6, Uptime: 1407 * time.Millisecond},
	}, {
		name: "server that joined the leader before the reconfiguration",
		data: fixture(t, "stat-joined.json"),
		want: zkclient.ServerStat{Role: zkclient.RoleFollower, Version: version, LastZxid: 0x100000008, NodeCount: 6, Uptime: 632 * time.Millisecond},
	}, {
		name: "observer, read-only, outstanding requests",
		data: []byte(`{"version":"3.8.4","read_only":true,"node_count":9,"command":"stats","error":null,
			"server_stats":{"server_state":"observer","last_processed_zxid":8589934593,"num_alive_client_connections":3,"outstanding_requests":2,"uptime":5}}`),
		want: zkclient.ServerStat{Role: zkclient.RoleObserver, Version: "3.8.4", ReadOnly: true, LastZxid: 0x200000001, Connections: 3, OutstandingRequests: 2, NodeCount: 9, Uptime: 5 * time.Millisecond},
	}, {
		name:    "not serving",
		data:    fixture(t, "stat-not-serving.json"),
		wantErr: "not currently serving requests",
	}, {
		name:    "other command error",
		data:    []byte(`{"command":"stat","error":"something else"}`),
		wantErr: "something else",
	}, {
		name:    "no server_stats",
		data:    []byte(`{"command":"stats","error":null}`),
		wantErr: "no server_stats",
	}, {
		name:    "no server state",
		data:    []byte(`{"command":"stats","error":null,"server_stats":{"uptime":1}}`),
		wantErr: "no server_stats.server_state",
	}, {
		name:    "not JSON",
		data:    []byte(`<html>Error 404</html>`),
		wantErr: "parsing the stat answer",
	}, {
		name:    "wrong type",
		data:    []byte(`{"server_stats":{"server_state":"leader","last_processed_zxid":"0x1"}}`),
		wantErr: "parsing the stat answer",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := zkclient.ParseStat(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseStat() = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStat(): %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseStat() =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestNotServingError checks that the not-serving answer is told apart from
// other command errors.
func TestNotServingError(t *testing.T) {
	_, err := zkclient.ParseStat(fixture(t, "stat-not-serving.json"))
	var cmdErr *zkclient.CommandError
	if !errors.Is(err, zkclient.ErrNotServing) || !errors.As(err, &cmdErr) {
		t.Fatalf("err = %v, want ErrNotServing and a *CommandError", err)
	}
	if cmdErr.Command != "stat" || cmdErr.Message != "This ZooKeeper instance is not currently serving requests" {
		t.Errorf("CommandError = %+v", cmdErr)
	}
	_, err = zkclient.ParseStat([]byte(`{"command":"stat","error":"something else"}`))
	if errors.Is(err, zkclient.ErrNotServing) || !errors.As(err, &cmdErr) {
		t.Errorf("err = %v, want a *CommandError that is not ErrNotServing", err)
	}
}

func TestZxid(t *testing.T) {
	z := zkclient.Zxid(0x300000007)
	if z.Epoch() != 3 || z.Counter() != 7 || z.String() != "0x300000007" {
		t.Errorf("zxid %d: epoch %d counter %d string %s", int64(z), z.Epoch(), z.Counter(), z)
	}
}

// TestStatHTTP checks Stat's handling of the HTTP exchange against a local
// HTTP server answering fixtures: the path, status codes other than 200,
// and a server that never answers (the context's deadline ends the call).
func TestStatHTTP(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/commands/stat" {
			http.NotFound(w, r)
			return
		}
		switch r.Header.Get("X-Test") {
		case "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "error":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "boom")
		case "not-serving":
			_, _ = w.Write(fixture(t, "stat-not-serving.json"))
		default:
			_, _ = w.Write(fixture(t, "stat-leader.json"))
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	addr := strings.TrimPrefix(srv.URL, "http://")
	client := func(mode string) *http.Client {
		return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Test", mode)
			return http.DefaultTransport.RoundTrip(r)
		})}
	}

	st, err := zkclient.Stat(t.Context(), client("ok"), addr)
	if err != nil || st.Role != zkclient.RoleLeader {
		t.Errorf("Stat() = %+v, %v; want the leader", st, err)
	}

	_, err = zkclient.Stat(t.Context(), client("not-serving"), addr)
	if !errors.Is(err, zkclient.ErrNotServing) {
		t.Errorf("Stat() error = %v, want ErrNotServing", err)
	}

	_, err = zkclient.Stat(t.Context(), client("error"), addr)
	var statusErr *zkclient.StatusError
	if !errors.As(err, &statusErr) || statusErr.StatusCode != http.StatusInternalServerError || statusErr.Body != "boom" {
		t.Errorf("Stat() error = %v, want a StatusError 500", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = zkclient.Stat(ctx, client("hang"), addr)
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Errorf("Stat() on a hung server = %v after %s, want the context's deadline after 200ms", err, took)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
