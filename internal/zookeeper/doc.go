// Package zookeeper is Steward's ZooKeeper system: the ZookeeperCluster
// controller, an actor of the framework (internal/framework), and what it
// stands on.
//
// The controller's files split by concern:
//   - controller.go: options, setup, Declare, which applies the declarative
//     children on every pass (flows included) and observes the ensemble
//     once, and Observe, which starts a flow when membership or a server's
//     revision differs from the spec;
//   - observe.go: observing the ensemble (the pods, and each server's
//     AdminServer stat and voting view, gathered concurrently with a
//     deadline) into the ensemble Declare returns; it writes no status;
//   - status.go: status written from that observation, and one setter per
//     condition (Available, Progressing, Ready);
//   - webhook.go: admission (defaults, validation, the children dry-run);
//   - scale.go: the scale flow, membership changed one dynamic
//     reconfiguration at a time, never below a serving quorum;
//   - restart.go: the rolling-restart flow, followers first, the leader
//     last;
//   - credentials.go: the super user's password, which reconfiguration
//     needs;
//   - delete.go: Finalize, honoring the reclaim policy.
//
// docs/zookeeper.md gives the design and its decisions.
//
// Subpackages:
//   - zkclient talks to the ZooKeeper servers themselves: the AdminServer's
//     stat and voting_view commands, and the ensemble's membership (dynamic
//     reconfiguration) over the client port.
//   - build holds the pure builders: the desired Services, PodDisruptionBudget,
//     configuration, credentials and StatefulSet of a ZookeeperCluster, with
//     no client.
//   - zktest starts real ZooKeeper servers from the image's root filesystem
//     for the tests of the packages above.
package zookeeper
