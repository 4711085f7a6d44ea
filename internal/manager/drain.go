package manager

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// drain is the manager's way out: asked to stop, it first reports not
// ready and keeps serving for a delay, and only then stops the manager.
//
// Without it, a replica stops listening the moment it gets SIGTERM, while
// its address is still in the webhook Service's endpoints for the second
// or two the EndpointSlice controller and every kube-proxy take to drop
// it; the API server does not retry a webhook call that was refused, so
// creates and updates of Steward's kinds would fail in that window on
// every rolling update, eviction or node drain.
type drain struct {
	delay    time.Duration
	draining chan struct{}
}

func newDrain(delay time.Duration) *drain {
	return &drain{delay: delay, draining: make(chan struct{})}
}

// run waits until stopRequested ends, then drains, then calls stop. It
// returns early when the manager stops on its own (running ends).
func (d *drain) run(stopRequested, running context.Context, stop func(), log logr.Logger) {
	select {
	case <-stopRequested.Done():
	case <-running.Done():
		return
	}
	close(d.draining)
	log.Info("Stopping: not ready, still serving while traffic moves to the other replicas", "delay", d.delay)
	select {
	case <-time.After(d.delay):
	case <-running.Done():
	}
	stop()
}

// closingServer is the webhook server of a replica with a drain: once the
// drain starts, every admission response asks the API server to close its
// connection (Connection: close). The API server keeps HTTP connections to
// a webhook pod open between requests, and kube-proxy routes only new
// connections, so without this it would go on sending requests to a
// stopping replica over a connection that breaks when the process ends (a
// pod deleted with --force gets two seconds): a request lost that way is
// refused, never retried. Closed after each answer, the next request opens
// a connection that the Service routes to a replica that stays.
type closingServer struct {
	webhook.Server
	drain *drain
}

// Register registers hook behind the drain's Connection: close.
func (s closingServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drain.started() {
			w.Header().Set("Connection", "close")
		}
		hook.ServeHTTP(w, r)
	}))
}

// started reports whether the drain started.
func (d *drain) started() bool {
	select {
	case <-d.draining:
		return true
	default:
		return false
	}
}

// check is the readiness check "shutdown": failing once draining started.
func (d *drain) check(*http.Request) error {
	if d.started() {
		return errors.New("shutting down")
	}
	return nil
}
