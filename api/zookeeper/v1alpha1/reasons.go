package v1alpha1

// Reasons that only ZookeeperCluster uses, next to the shared ones in
// api/common. Users read them in status.conditions, in kubectl get's Reason
// column and in kubectl get events; docs/zookeeper.md says what each means.
// They are API: renaming one breaks whoever matches on it.

// Reasons of the Available, Progressing and Ready conditions that only
// ZooKeeper uses, next to the shared ones in api/common/v1alpha1
// (Creating, Scaling, Restarting, Stable, QuorumServing, NoQuorum,
// QuorumAtRisk, NoLeader).
const (
	// ReasonServersNotServing: a member's server does not serve yet.
	ReasonServersNotServing = "ServersNotServing"
)

// Reasons of the Events the ZooKeeper controller records, next to the
// framework's condition transitions and the shared ones in api/common
// (VolumeDeleted).
const (
	// EventMemberAdded: a server joined the ensemble.
	EventMemberAdded = "MemberAdded"
	// EventMemberRemoved: a server left the ensemble.
	EventMemberRemoved = "MemberRemoved"
	// EventServerRestarted: a server's pod was evicted to restart it onto
	// the latest revision.
	EventServerRestarted = "ServerRestarted"
	// EventBootstrapReduced: a re-created cluster starts with fewer servers
	// than spec.replicas, because the volumes of the others belong to
	// departed members.
	EventBootstrapReduced = "BootstrapReduced"
)
