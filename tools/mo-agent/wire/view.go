package wire

import (
	"slices"
)

// HAKeeper's states (pb.HAKeeperState's names).
const (
	StateRunning         = "HAKeeperRunning"
	StateBootstrapFailed = "HAKeeperBootstrapFailed"
)

// A store's state as HAKeeper sees it: it heard from the store within the
// store type's timeout, or not.
const (
	StoreUp   = "NormalState"
	StoreDown = "TimeoutState"
)

// CN work states.
const (
	WorkStateWorking  = "Working"
	WorkStateDraining = "Draining"
	WorkStateDrained  = "Drained"
)

// View is HAKeeper's view of a cluster at one tick: what GET /v1/cluster
// answers, read with one GetClusterState and one GetClusterDetails call. A
// field is added on both sides at once (this package is both sides), never
// renamed: a pod running an older image must still be understood.
type View struct {
	// State is HAKeeper's state, pb.HAKeeperState's name:
	// HAKeeperCreated, HAKeeperBootstrapping,
	// HAKeeperBootstrapCommandsReceived, HAKeeperBootstrapFailed or
	// HAKeeperRunning.
	State string `json:"state"`
	// Tick is HAKeeper's logical clock when it answered: of two views,
	// the one with the higher tick is the newer.
	Tick uint64 `json:"tick"`
	// LogShards are the log shards with their members and leader, by ID.
	LogShards []LogShard `json:"logShards"`
	// LogStores, TNStores, CNStores and ProxyStores are the stores
	// HAKeeper knows, each with its state (StoreUp, or StoreDown when
	// HAKeeper has not heard from it within the store type's timeout),
	// sorted by UUID.
	LogStores   []LogStore   `json:"logStores"`
	TNStores    []TNStore    `json:"tnStores"`
	CNStores    []CNStore    `json:"cnStores"`
	ProxyStores []ProxyStore `json:"proxyStores"`
	// DeletedStores are CN, TN and proxy stores HAKeeper expired.
	DeletedStores []DeletedStore `json:"deletedStores"`
}

// LogShard is one log shard.
type LogShard struct {
	ShardID uint64 `json:"shardID"`
	// Replicas maps each member's replica ID to its log store's UUID.
	Replicas map[uint64]string `json:"replicas"`
	// NumberOfReplicas is how many members the shard should have; it was
	// fixed at bootstrap.
	NumberOfReplicas uint64 `json:"numberOfReplicas"`
	// LeaderID is the leader's replica ID; 0 when there is none.
	LeaderID uint64 `json:"leaderID"`
	Term     uint64 `json:"term"`
	Epoch    uint64 `json:"epoch"`
}

// LogStore is a log service store.
type LogStore struct {
	UUID           string    `json:"uuid"`
	ServiceAddress string    `json:"serviceAddress"`
	State          string    `json:"state"`
	Tick           uint64    `json:"tick"`
	Replicas       []Replica `json:"replicas"`
}

// Replica is a shard replica on a store.
type Replica struct {
	ShardID   uint64 `json:"shardID"`
	ReplicaID uint64 `json:"replicaID"`
}

// TNStore is a TN store.
type TNStore struct {
	UUID           string    `json:"uuid"`
	ServiceAddress string    `json:"serviceAddress"`
	State          string    `json:"state"`
	Tick           uint64    `json:"tick"`
	Shards         []Replica `json:"shards"`
}

// CNStore is a CN store.
type CNStore struct {
	UUID       string `json:"uuid"`
	SQLAddress string `json:"sqlAddress"`
	State      string `json:"state"`
	Tick       uint64 `json:"tick"`
	// WorkState is Unknown, Working, Draining or Drained.
	WorkState string `json:"workState"`
	// Labels are the store's labels, each with its values.
	Labels map[string][]string `json:"labels,omitempty"`
	// UpTime is when the store started, in Unix nanoseconds.
	UpTime int64 `json:"upTime"`
}

// ProxyStore is a proxy.
type ProxyStore struct {
	UUID          string `json:"uuid"`
	ListenAddress string `json:"listenAddress"`
	Tick          uint64 `json:"tick"`
}

// DeletedStore is a store HAKeeper expired.
type DeletedStore struct {
	UUID      string `json:"uuid"`
	StoreType string `json:"storeType"`
	Address   string `json:"address"`
}

// Running reports whether HAKeeper is bootstrapped and running.
func (v *View) Running() bool { return v.State == StateRunning }

// LeaderlessShards returns the IDs of the log shards without a leader, in
// order; none once every shard has elected one.
func (v *View) LeaderlessShards() []uint64 {
	var ids []uint64
	for _, s := range v.LogShards {
		if s.LeaderID == 0 {
			ids = append(ids, s.ShardID)
		}
	}
	return ids
}

// LogStore returns the log store with uuid, and false when HAKeeper does not
// know it.
func (v *View) LogStore(uuid string) (LogStore, bool) {
	i := slices.IndexFunc(v.LogStores, func(s LogStore) bool { return s.UUID == uuid })
	if i < 0 {
		return LogStore{}, false
	}
	return v.LogStores[i], true
}

// RunsReplica reports whether HAKeeper hears from the log store with uuid
// and the store reports running a replica of shard.
func (v *View) RunsReplica(uuid string, shard uint64) bool {
	s, ok := v.LogStore(uuid)
	return ok && s.State == StoreUp && slices.ContainsFunc(s.Replicas, func(r Replica) bool { return r.ShardID == shard })
}

// CNLabelsPath is the probe's path of a CN's labels: PUT sets them in
// HAKeeper, replacing the ones it had, from a JSON object of each key's
// values; {uuid} is the CN's.
const CNLabelsPath = "/v1/cn/{uuid}/labels"

// LockRestartPath is the probe's path of a CN's lock service restart
// handshake (POST starts it, GET answers a LockRestart); {uuid} is the CN's.
const LockRestartPath = "/v1/cn/{uuid}/restart"

// LockRestart is whether a CN whose restart was announced to the TN's lock
// table allocator may stop: its lock tables have moved to other CNs.
type LockRestart struct {
	// CanRestart is the allocator's answer: the CN's lock tables have
	// moved. It is true too for a CN the allocator does not know.
	CanRestart bool `json:"canRestart"`
	// RemainTxn is how many transactions still hold locks on the CN; -1
	// while the allocator cannot tell.
	RemainTxn int32 `json:"remainTxn"`
}
