package main

// View is what GET /v1/cluster answers: HAKeeper's view of a MatrixOne
// cluster, read with one GetClusterState and one GetClusterDetails call.
// The operator decodes it (internal/matrixone/hakeeper); a field is added
// here and there together, never renamed.
type View struct {
	// state is HAKeeper's state: HAKeeperCreated, HAKeeperBootstrapping,
	// HAKeeperBootstrapCommandsReceived, HAKeeperBootstrapFailed or
	// HAKeeperRunning.
	State string `json:"state"`
	// tick is HAKeeper's logical clock when it answered.
	Tick uint64 `json:"tick"`
	// logShards are the log shards with their members and leader.
	LogShards []LogShard `json:"logShards"`
	// logStores, tnStores, cnStores and proxyStores are the stores HAKeeper
	// knows, each with its state (NormalState or TimeoutState, which is
	// HAKeeper's "down").
	LogStores   []LogStore   `json:"logStores"`
	TNStores    []TNStore    `json:"tnStores"`
	CNStores    []CNStore    `json:"cnStores"`
	ProxyStores []ProxyStore `json:"proxyStores"`
	// deletedStores are CN, TN and proxy stores HAKeeper expired.
	DeletedStores []DeletedStore `json:"deletedStores"`
}

// LogShard is one log shard.
type LogShard struct {
	ShardID uint64 `json:"shardID"`
	// replicas maps each member's replica ID to its log store's UUID.
	Replicas map[uint64]string `json:"replicas"`
	// numberOfReplicas is how many members the shard should have (fixed at
	// bootstrap).
	NumberOfReplicas uint64 `json:"numberOfReplicas"`
	// leaderID is the replica ID of the leader; 0 when there is none.
	LeaderID uint64 `json:"leaderID"`
	Term     uint64 `json:"term"`
	Epoch    uint64 `json:"epoch"`
}

// LogStore is a log service store.
type LogStore struct {
	UUID           string `json:"uuid"`
	ServiceAddress string `json:"serviceAddress"`
	State          string `json:"state"`
	Tick           uint64 `json:"tick"`
	// replicas are the shard replicas the store hosts.
	Replicas []Replica `json:"replicas"`
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
	// workState is Unknown, Working, Draining or Drained.
	WorkState string `json:"workState"`
	// labels are the store's labels, each with its values.
	Labels map[string][]string `json:"labels,omitempty"`
	// upTime is when the store started, in Unix nanoseconds.
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
