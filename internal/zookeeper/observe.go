package zookeeper

import (
	"context"
	"net/http"
	"slices"

	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// ObserveEnsemble asks again every target whose answer is older than the
// collector's MinInterval, concurrently, through the collector c, which
// bounds each call by its call timeout and the whole by its
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
	return c.Collect(ctx, targets, observeCall(client))
}

// WatchEnsemble returns what the collector c last heard from each target,
// keyed by Target.Key, without waiting: c keeps asking every target in the
// background (zkclient.Observe) and notifies when an answer changed. A
// target named for the first time reads probe.ErrPending until it answers.
func WatchEnsemble(c *probe.Collector[zkclient.Observation], client *http.Client,
	targets []probe.Target) map[string]probe.Result[zkclient.Observation] {
	return c.Watch(targets, observeCall(client))
}

// observationChanged reports whether two answers of a server differ in what
// the controller acts on or shows: its role, read-only mode, version or
// voting members. Its zxid, uptime and counters move all the time.
func observationChanged(old, cur zkclient.Observation) bool {
	return old.Stat.Role != cur.Stat.Role || old.Stat.ReadOnly != cur.Stat.ReadOnly ||
		old.Stat.Version != cur.Stat.Version || !slices.Equal(old.Voting, cur.Voting)
}

func observeCall(client *http.Client) probe.CallFunc[zkclient.Observation] {
	return func(ctx context.Context, t probe.Target) (zkclient.Observation, error) {
		return zkclient.Observe(ctx, client, t.Address)
	}
}
