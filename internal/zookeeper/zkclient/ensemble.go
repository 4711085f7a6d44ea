package zkclient

import (
	"context"
	"net/http"
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
