package mosql_test

import (
	"testing"

	"github.com/stewardhq/steward/internal/matrixone/mosql"
)

// TestMovableSessions: a drain waits only for the sessions the proxy can
// move. The rows are those processlist() shows on a CN of MatrixOne 1.2.4
// that has run a while: MatrixOne's own connections come straight to the
// CN (no proxy_host) and never move; every client's came through a proxy.
func TestMovableSessions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session mosql.Session
		movable bool
	}{
		{"a client through the proxy", mosql.Session{User: "root", DB: "e2e", ProxyHost: "10.244.0.31:6001"}, true},
		{"a client through the proxy, no database", mosql.Session{User: "app", ProxyHost: "10.244.0.31:6001"}, true},
		{"a client through the proxy, in mo_task", mosql.Session{User: "root", DB: "mo_task", ProxyHost: "10.244.0.31:6001"}, true},
		{"a node's system log writer", mosql.Session{User: "mo_logger"}, false},
		{"a node's system log writer in a database", mosql.Session{User: "mo_logger", DB: "system"}, false},
		{"the task service's storage", mosql.Session{User: "6b0c4f1e-3a53-4f7d-9b8e-2f3c1a0d9e77", DB: "mo_task"}, false},
		{"the operator's administrative statement", mosql.Session{User: "root"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.session.Movable(); got != tc.movable {
				t.Errorf("Movable(%+v) = %v, want %v", tc.session, got, tc.movable)
			}
		})
	}
}
