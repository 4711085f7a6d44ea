package metrics

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestRegistered checks that every metric of the design is served from
// controller-runtime's registry, and that registering again is refused
// rather than panicking.
func TestRegistered(t *testing.T) {
	ReconcileDuration.WithLabelValues("Test", ResultSuccess).Observe(0.1)
	ActionsTotal.WithLabelValues("Test", "ScaleOut").Inc()
	OperationsInFlight.WithLabelValues("Test", "upgrade").Set(1)
	ProbeDuration.WithLabelValues("Test").Observe(0.01)
	ProbeFailuresTotal.WithLabelValues("Test").Inc()
	ProbeChangesTotal.WithLabelValues("Test").Inc()

	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
	}
	for _, name := range []string{
		"steward_reconcile_duration_seconds", "steward_actions_total", "steward_operations_in_flight",
		"steward_probe_duration_seconds", "steward_probe_failures_total", "steward_probe_changes_total",
	} {
		if !found[name] {
			t.Errorf("metric %s is not registered", name)
		}
	}
	var are prometheus.AlreadyRegisteredError
	if err := crmetrics.Registry.Register(ActionsTotal); err == nil {
		t.Error("registering ActionsTotal twice succeeded")
	} else if !errors.As(err, &are) {
		t.Errorf("second registration: %v", err)
	}
}
