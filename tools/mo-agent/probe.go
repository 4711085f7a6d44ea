package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/matrixorigin/matrixone/pkg/logservice"
	pb "github.com/matrixorigin/matrixone/pkg/pb/logservice"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// probe answers GET /v1/cluster from one HAKeeper client, connected on first
// use and again after a failed call (the client finds HAKeeper's store among
// the addresses it is given).
type probe struct {
	addresses []string
	timeout   time.Duration

	mu     sync.Mutex
	client logservice.ClusterHAKeeperClient
}

func (p *probe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	view, err := p.view(ctx)
	if err != nil {
		slog.Info("HAKeeper did not answer", "addresses", p.addresses, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(view)
}

func (p *probe) view(ctx context.Context) (*wire.View, error) {
	state, err := p.state(ctx)
	if err != nil {
		return nil, err
	}
	details, err := p.details(ctx)
	if err != nil {
		return nil, err
	}
	return viewOf(state, details), nil
}

// state is HAKeeper's checker state.
func (p *probe) state(ctx context.Context) (pb.CheckerState, error) {
	var state pb.CheckerState
	err := p.call(ctx, func(c logservice.ClusterHAKeeperClient) (err error) {
		state, err = c.GetClusterState(ctx)
		return err
	})
	return state, err
}

// details are HAKeeper's cluster details.
func (p *probe) details(ctx context.Context) (pb.ClusterDetails, error) {
	var details pb.ClusterDetails
	err := p.call(ctx, func(c logservice.ClusterHAKeeperClient) (err error) {
		details, err = c.GetClusterDetails(ctx)
		return err
	})
	return details, err
}

// close closes the HAKeeper client, if any.
func (p *probe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		_ = p.client.Close()
		p.client = nil
	}
}

// call runs f with the HAKeeper client, connecting first when there is
// none. One call at a time: the operator asks every few seconds, so a
// queue is simpler than a pool of clients.
func (p *probe) call(ctx context.Context, f func(logservice.ClusterHAKeeperClient) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		c, err := logservice.NewLogHAKeeperClient(ctx, logservice.HAKeeperClientConfig{ServiceAddresses: p.addresses})
		if err != nil {
			return fmt.Errorf("connect to HAKeeper: %w", err)
		}
		p.client = c
	}
	err := f(p.client)
	if err != nil {
		// Reconnect next time: HAKeeper may have moved to another store.
		err = errors.Join(err, p.client.Close())
		p.client = nil
	}
	return err
}

func viewOf(state pb.CheckerState, details pb.ClusterDetails) *wire.View {
	v := &wire.View{State: state.State.String(), Tick: state.Tick}
	replicas := map[uint64]uint64{}
	for _, rec := range state.ClusterInfo.LogShards {
		replicas[rec.ShardID] = rec.NumberOfReplicas
	}
	for id, s := range state.LogState.Shards {
		v.LogShards = append(v.LogShards, wire.LogShard{ShardID: id, Replicas: s.Replicas,
			NumberOfReplicas: replicas[id], LeaderID: s.LeaderID, Term: s.Term, Epoch: s.Epoch})
	}
	sort.Slice(v.LogShards, func(i, j int) bool { return v.LogShards[i].ShardID < v.LogShards[j].ShardID })
	for _, s := range details.LogStores {
		ls := wire.LogStore{UUID: s.UUID, ServiceAddress: s.ServiceAddress, State: s.State.String(), Tick: s.Tick}
		for _, r := range s.Replicas {
			ls.Replicas = append(ls.Replicas, wire.Replica{ShardID: r.ShardID, ReplicaID: r.ReplicaID})
		}
		v.LogStores = append(v.LogStores, ls)
	}
	for _, s := range details.TNStores {
		tn := wire.TNStore{UUID: s.UUID, ServiceAddress: s.ServiceAddress, State: s.State.String(), Tick: s.Tick}
		for _, r := range s.Shards {
			tn.Shards = append(tn.Shards, wire.Replica{ShardID: r.ShardID, ReplicaID: r.ReplicaID})
		}
		v.TNStores = append(v.TNStores, tn)
	}
	for _, s := range details.CNStores {
		cn := wire.CNStore{UUID: s.UUID, SQLAddress: s.SQLAddress, State: s.State.String(), Tick: s.Tick,
			WorkState: s.WorkState.String(), UpTime: s.UpTime}
		for k, l := range s.Labels {
			if cn.Labels == nil {
				cn.Labels = map[string][]string{}
			}
			cn.Labels[k] = l.Labels
		}
		v.CNStores = append(v.CNStores, cn)
	}
	for _, s := range details.ProxyStores {
		v.ProxyStores = append(v.ProxyStores, wire.ProxyStore{UUID: s.UUID, ListenAddress: s.ListenAddress, Tick: s.Tick})
	}
	for _, s := range details.DeletedStores {
		v.DeletedStores = append(v.DeletedStores, wire.DeletedStore{UUID: s.UUID, StoreType: s.StoreType, Address: s.Address})
	}
	sort.Slice(v.LogStores, func(i, j int) bool { return v.LogStores[i].UUID < v.LogStores[j].UUID })
	sort.Slice(v.TNStores, func(i, j int) bool { return v.TNStores[i].UUID < v.TNStores[j].UUID })
	sort.Slice(v.CNStores, func(i, j int) bool { return v.CNStores[i].UUID < v.CNStores[j].UUID })
	sort.Slice(v.ProxyStores, func(i, j int) bool { return v.ProxyStores[i].UUID < v.ProxyStores[j].UUID })
	return v
}

// knownLogStore asks HAKeeper, within a minute, whether it knows the log
// store uuid; HAKeeper must be running to say.
func knownLogStore(ctx context.Context, addresses []string, uuid string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p := &probe{addresses: addresses}
	var view *wire.View
	var err error
	for view == nil {
		if view, err = p.view(ctx); err != nil {
			select {
			case <-ctx.Done():
				return false, err
			case <-time.After(2 * time.Second):
			}
		}
	}
	p.close()
	if view.State != wire.StateRunning {
		return false, fmt.Errorf("HAKeeper is %s", view.State)
	}
	_, known := view.LogStore(uuid)
	return known, nil
}
