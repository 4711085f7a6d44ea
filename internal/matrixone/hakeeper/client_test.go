package hakeeper

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestGet(t *testing.T) {
	fixture, err := os.ReadFile("testdata/view-running.json")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok"+Path, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fixture) })
	mux.HandleFunc("/down"+Path, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "connect to HAKeeper: no hakeeper", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/garbled"+Path, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{")) })
	mux.HandleFunc("/slow"+Path, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	v, err := Get(ctx, srv.Client(), srv.URL+"/ok/")
	if err != nil || !v.Running() || len(v.LogStores) != 1 {
		t.Errorf("ok: %+v, %v", v, err)
	}
	var status *StatusError
	if _, err := Get(ctx, srv.Client(), srv.URL+"/down"); !errors.As(err, &status) || status.StatusCode != http.StatusServiceUnavailable ||
		status.Body != "connect to HAKeeper: no hakeeper" {
		t.Errorf("down: %v, want a 503 StatusError with the agent's message", err)
	}
	if _, err := Get(ctx, srv.Client(), srv.URL+"/garbled"); err == nil {
		t.Error("garbled: no error")
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Get(short, srv.Client(), srv.URL+"/slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("slow: returned after %s, not at the deadline", d)
	}
}
