// Package zkclient is Steward's client of ZooKeeper servers (3.8, as in
// Steward's image): what the ZookeeperCluster controller asks the
// application itself.
//
// Server state comes from the AdminServer's stat command over HTTP
// ([Stat], GET http://<pod IP>:<admin port>/commands/stat): the server's
// role (leader, follower, observer, standalone), last zxid, version,
// client connections and znode count. A server that runs but does not serve
// (no quorum, election in progress) answers HTTP 200 with an error and no
// stats; [Stat] returns it as an error matching [ErrNotServing].
// [Observe] adds the voting_view command ([VotingView]: the members of the
// server's configuration) and opens no session, so it costs the ensemble
// no transaction; the controller (zookeeper.ObserveEnsemble) asks every
// server at once through the framework's probe collector, so that a hung
// server costs at most the collector's deadline and shows up as a
// per-server error. This package imports nothing of the framework.
//
// Membership goes through the client port with go-zookeeper: [Members]
// reads the committed dynamic configuration (/zookeeper/config, parsed by
// [ParseConfig]); [Reconfigure], [AddMember] and [RemoveMember] change it
// with one incremental reconfiguration, conditional on the configuration
// version the caller read (a stale one fails with [ErrStaleVersion]) and
// idempotent (a change that already holds succeeds without writing). Each
// call opens a short session, bounded by its context, and closes it; the
// servers must run with reconfigEnabled=true, and the client needs
// ZooKeeper's super user unless they skip ACLs.
//
// Every call takes a context and ends when it does; callers give it a
// deadline. go-zookeeper's log lines go to the context's logr logger at
// verbosity 4.
//
// +steward:role=client
package zkclient
