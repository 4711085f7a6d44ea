package zkclient

import (
	"context"
	"net/http"

	"github.com/stewardhq/steward/internal/framework/probe"
)

// Observation is what one server's AdminServer says: its stat and the
// voting members of its configuration (the leader's are the committed
// membership).
type Observation struct {
	Stat   ServerStat
	Voting []int
}

// Observe asks the AdminServer at addr for [Stat] and, when the server
// serves, its [VotingView]. A server that does not serve returns the stat
// error (see ErrNotServing).
func Observe(ctx context.Context, client *http.Client, addr string) (Observation, error) {
	st, err := Stat(ctx, client, addr)
	if err != nil {
		return Observation{}, err
	}
	voting, err := VotingView(ctx, client, addr)
	if err != nil {
		return Observation{}, err
	}
	return Observation{Stat: st, Voting: voting}, nil
}

// ObserveFunc returns the probe call that runs [Observe] against a target;
// the target's Address is its AdminServer's host:port. A nil client means
// http.DefaultClient.
func ObserveFunc(client *http.Client) probe.CallFunc[Observation] {
	return func(ctx context.Context, t probe.Target) (Observation, error) {
		return Observe(ctx, client, t.Address)
	}
}

// ObserveEnsemble observes every target concurrently through the collector
// c, which bounds each call by its call timeout and the whole by its
// deadline: a hung server never delays the answer beyond the deadline. It
// returns each target's latest result keyed by Target.Key: a server that
// did not answer in time has a timeout error (its call timed out) or
// probe.ErrPending (its call still runs), one that runs without serving
// has an error matching ErrNotServing. Create c once per controller with
// probe.NewCollector[Observation] and keep it.
func ObserveEnsemble(ctx context.Context, c *probe.Collector[Observation], client *http.Client, targets []probe.Target) map[string]probe.Result[Observation] {
	return c.Collect(ctx, targets, ObserveFunc(client))
}
