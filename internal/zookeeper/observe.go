package zookeeper

import (
	"context"
	"net/http"

	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// ObserveEnsemble observes every target concurrently through the collector
// c, which bounds each call by its call timeout and the whole by its
// deadline: a hung server never delays the answer beyond the deadline. A
// target's Address is its AdminServer's host:port; each call is
// zkclient.Observe. It returns each target's latest result keyed by
// Target.Key: a server that did not answer in time has a timeout error (its
// call timed out) or probe.ErrPending (its call still runs), one that runs
// without serving has an error matching zkclient.ErrNotServing. Create c
// once per controller with probe.NewCollector[zkclient.Observation] and
// keep it. The controller and the benchmark (bench/zookeeper) both observe
// through it.
func ObserveEnsemble(ctx context.Context, c *probe.Collector[zkclient.Observation], client *http.Client,
	targets []probe.Target) map[string]probe.Result[zkclient.Observation] {
	return c.Collect(ctx, targets, func(ctx context.Context, t probe.Target) (zkclient.Observation, error) {
		return zkclient.Observe(ctx, client, t.Address)
	})
}
