// Package oceanbase is Steward's OceanBase system: the controllers of its
// nine kinds, actors of the framework (internal/framework), and what they
// stand on. docs/oceanbase.md says what they do and why.
//
// OBCluster's controller runs a cluster: its zones are StatefulSets of
// observers, each observer with its own Service whose IP is its address in
// OceanBase; it bootstraps the cluster as a task flow, adds servers as their
// pods come, deletes servers from OceanBase before their pods go, and
// reports what OceanBase says of its servers and zones. OBTenant's and
// OBParameter's controllers manage a cluster's tenants and parameters
// through the cluster's login; OBZone and OBServer are views the cluster's
// controller applies and whose controllers copy the cluster's status;
// OBTenantBackupPolicy, OBTenantBackup, OBTenantRestore and
// OBTenantOperation protect a tenant and act on it (standby tenants
// included). They speak only OceanBase's MySQL protocol and administrative SQL (obsql).
//
// One package, a file per actor. The actors share what a subpackage per
// actor would have to export to the others: the one operator login per
// cluster (login.go) that the cluster's passes, its OBParameters' and a
// tenant's CREATE TENANT use at once, the cluster's status as the views'
// and the dependents' source (the cluster's Ready and an OBZone's are one
// function, zoneServes), and the background runner (background.go). Files:
//   - controller.go: the OBCluster actor: Options, Setup (which registers
//     every kind's controller), Default, Declare (the children, each zone's
//     StatefulSet sized by what a flow holds, status.operation.held, or
//     else kept at a size larger than the spec's until a flow releases it),
//     Observe (which flow or action comes next) and Finalize;
//   - observe.go: what Declare observes (cluster, which it returns to
//     Observe and the steps): the StatefulSets, pods, Services and claims,
//     and OceanBase's servers, zones, tenants and parameters;
//   - status.go: status written from that observation, and one setter per
//     condition (StoresLost, Bootstrapped, Ready);
//   - actions.go: Observe's one-pass actions (AddServers, SetParameters),
//     which steps of the flows run too;
//   - bootstrap.go, scale.go, zones.go, recover.go, upgrade.go: the
//     OBCluster's task flows (bootstrap; scale-in; add-zone and remove-zone,
//     with InterruptFlow; recover; upgrade), each with its helpers. A step
//     that needs Declare to size a StatefulSet holds it
//     (commonv1.Operation.Hold); no code outside a flow's file names its
//     steps;
//   - tenant.go and tenant_flows.go: the OBTenant actor (its observation,
//     tenant) and its create and zones flows, one-pass actions and drop;
//   - parameter.go: the OBParameter actor (its observation, parameter);
//   - backuppolicy.go and backuppolicy_flows.go: the OBTenantBackupPolicy
//     actor (archive, destinations, delete policy, schedules) and its
//     archive-destination flow; backup.go: the OBTenantBackup actor (one
//     backup job, found again after a restart) and the tenant login both
//     use (tenantLogin is in backuppolicy.go); restore.go: the
//     OBTenantRestore actor (one restore job, found again after a restart,
//     then the tenant activated), which the OBTenant's create flow creates
//     for a tenant with spec.source.restore; operation.go: the
//     OBTenantOperation actor and its flows (switchover, failover,
//     change-password, replay-log);
//   - views.go: the OBZone and OBServer actors, twins that copy the
//     cluster's status, and the views the cluster's Declare applies;
//   - webhook.go: every kind's admission (Validate, RenderChildren, Admit,
//     Clashes) and the webhooks' registration;
//   - login.go: the shared operator logins, and a tenant's or parameter's
//     login to and dependency on its cluster;
//   - background.go: statements that take minutes (BOOTSTRAP, CREATE
//     TENANT), run outside the workers and polled by a step.
//
// Subpackages: build holds the pure builders of the children (no client);
// obsql is OceanBase's SQL, the controllers' wire client; obsim is the
// observer simulator the tests run in OceanBase's place.
package oceanbase
