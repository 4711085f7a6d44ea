// Package zookeeper is Steward's ZooKeeper system: the ZookeeperCluster
// controller and what it stands on.
//
// Subpackages:
//   - zkclient talks to the ZooKeeper servers themselves: the AdminServer's
//     stat command, gathered concurrently for a whole ensemble, and the
//     ensemble's membership (dynamic reconfiguration) over the client port.
//   - build holds the pure builders: the desired Services, PodDisruptionBudget,
//     configuration and StatefulSet of a ZookeeperCluster, with no client.
//   - zktest starts real ZooKeeper servers from the image's root filesystem
//     for the tests of the packages above.
package zookeeper
