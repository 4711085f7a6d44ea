package manager

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// recordingServer keeps the handlers registered on it.
type recordingServer struct {
	webhook.Server
	hooks map[string]http.Handler
}

func (s *recordingServer) Register(path string, hook http.Handler) { s.hooks[path] = hook }

// TestClosingServer: once the drain starts, every admission answer asks the
// API server to close its connection, so its next request opens one that
// the Service routes to a replica that stays; before, connections are kept.
func TestClosingServer(t *testing.T) {
	inner := &recordingServer{hooks: map[string]http.Handler{}}
	d := newDrain(0)
	s := closingServer{Server: inner, drain: d}
	s.Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))

	// connection is the Connection header of an answer.
	connection := func() string {
		rec := httptest.NewRecorder()
		inner.hooks["/validate"].ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", http.NoBody))
		return rec.Header().Get("Connection")
	}
	if got := connection(); got != "" {
		t.Errorf("before the drain, Connection: %q, want none (kept alive)", got)
	}
	if err := d.check(nil); err != nil {
		t.Errorf("before the drain, readiness: %v", err)
	}
	close(d.draining)
	if got := connection(); got != "close" {
		t.Errorf("draining, Connection: %q, want close", got)
	}
	if err := d.check(nil); err == nil {
		t.Error("draining, readiness passes")
	}
}
