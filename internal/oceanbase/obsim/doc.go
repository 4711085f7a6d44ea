// Package obsim is Steward's OceanBase observer simulator. It is NOT
// OceanBase: no observer binary can run on the machines Steward is tested on,
// so Steward's tests run this in its place, in real pods, and Steward's
// controllers talk to it exactly as they talk to an observer: the MySQL wire
// protocol (mysql_native_password, user@tenant in the handshake) on port
// 2881 and OceanBase's own administrative SQL and views. Nothing in the
// controllers may depend on a behavior only the simulator has; where the
// simulator and OceanBase's documentation disagree, the simulator is wrong.
//
// What it models (docs/oceanbase.md has the full list, and what it leaves
// out):
//   - One cluster across processes. A node starts empty and listens at once,
//     like an observer started without a RootService list. ALTER SYSTEM
//     BOOTSTRAP on one node makes it the RootService (RS) of a new cluster
//     with one server per zone; ALTER SYSTEM ADD SERVER brings more nodes in.
//     Nodes talk over HTTP on the RPC port (2882), in a protocol of the
//     simulator's own (rpc.go): the RS owns the cluster's state, pushes it to
//     every member each heartbeat, and members forward statements to it.
//   - The RootService's loss: members that stop hearing from the RS elect the
//     live member with the newest state, which takes over (ob-operator #325).
//   - Servers: ACTIVE, INACTIVE after the lease without heartbeats, back to
//     ACTIVE with a new start_service_time when the process returns;
//     DELETING while their units migrate to another server of the zone, then
//     gone, or DELETING for ever when no server can take them.
//   - Zones (add, start, stop, delete, with the refusals that would lose a
//     majority), parameters (cluster, zone, server and tenant scope), users
//     and passwords, resource unit configs, pools and units, tenants
//     (CREATING, NORMAL, DROPPING) and locality changes one zone at a time as
//     jobs.
//   - A user tenant's data (data.go): databases, tables, rows and
//     transactions over the MySQL protocol, executed by an embedded SQL
//     engine (go-mysql-server, MySQL's dialect, in memory) on the
//     RootService and kept as the tenant's log of commits, each with its
//     SCN, which every member holds.
//
// Knobs (Knobs; environment variables in the image, and an HTTP control
// endpoint for tests) make transitions slow, make statements fail once or
// always, or make a server deletion hang.
//
// +steward:role=testing
package obsim
