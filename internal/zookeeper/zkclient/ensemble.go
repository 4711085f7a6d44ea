package zkclient

import (
	"context"
	"net/http"

	"github.com/stewardhq/steward/internal/framework/probe"
)

// StatFunc returns the probe call that runs [Stat] against a target; the
// target's Address is its AdminServer's host:port. A nil client means
// http.DefaultClient.
func StatFunc(client *http.Client) probe.CallFunc[ServerStat] {
	return func(ctx context.Context, t probe.Target) (ServerStat, error) {
		return Stat(ctx, client, t.Address)
	}
}

// EnsembleStats asks every target's AdminServer for stat concurrently
// through the collector c, which bounds each call by its call timeout and
// the whole by its deadline: a hung server never delays the answer beyond
// the deadline. It returns each target's latest result keyed by Target.Key:
// a server that did not answer in time has a timeout error (its call timed
// out) or probe.ErrPending (its call still runs), one that runs without
// serving has an error matching ErrNotServing. Create c once per controller
// with probe.NewCollector[ServerStat] and keep it.
func EnsembleStats(ctx context.Context, c *probe.Collector[ServerStat], client *http.Client, targets []probe.Target) map[string]probe.Result[ServerStat] {
	return c.Collect(ctx, targets, StatFunc(client))
}
