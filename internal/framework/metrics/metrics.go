package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label values of ReconcileDuration's result label.
const (
	ResultSuccess  = "success"
	ResultRequeue  = "requeue"
	ResultConflict = "conflict"
	ResultError    = "error"
	ResultTerminal = "terminal"
)

var (
	// ReconcileDuration observes the duration of each reconcile pass by kind
	// and result (one of the Result* constants).
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "steward_reconcile_duration_seconds",
		Help:    "Duration of Steward reconcile passes by kind and result.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"kind", "result"})

	// ActionsTotal counts the actions the actors took, by kind and action
	// name. Operation steps count as actions named "<flow>/<step>".
	ActionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_actions_total",
		Help: "Actions taken by Steward controllers, by kind and action.",
	}, []string{"kind", "action"})

	// OperationsInFlight is the number of objects with a running or failed
	// task flow, by kind and operation name.
	OperationsInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_operations_in_flight",
		Help: "Objects with an active task flow, by kind and operation.",
	}, []string{"kind", "operation"})

	// ProbeDuration observes the latency of application probe calls by kind.
	ProbeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "steward_probe_duration_seconds",
		Help:    "Latency of application probe calls, by kind.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"kind"})

	// ProbeFailuresTotal counts failed application probe calls by kind.
	ProbeFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_probe_failures_total",
		Help: "Failed application probe calls, by kind.",
	}, []string{"kind"})

	// ProbeChangesTotal counts probe answers that moved in a way worth a
	// pass (success to failure, another class of error, another value),
	// by kind: each one starts a pass of the object the target belongs to.
	ProbeChangesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_probe_changes_total",
		Help: "Application probe answers that changed and started a pass, by kind.",
	}, []string{"kind"})
)

func init() {
	crmetrics.Registry.MustRegister(
		ReconcileDuration, ActionsTotal, OperationsInFlight, ProbeDuration, ProbeFailuresTotal, ProbeChangesTotal)
}
