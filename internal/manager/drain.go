package manager

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
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

// check is the readiness check "shutdown": failing once draining started.
func (d *drain) check(*http.Request) error {
	select {
	case <-d.draining:
		return errors.New("shutting down")
	default:
		return nil
	}
}
