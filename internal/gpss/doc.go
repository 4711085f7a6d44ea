// Package gpss is Steward's GPSS system: the GpssCluster controller, an
// actor of the framework (internal/framework), and what it stands on.
//
// The controller's files split by concern:
//   - controller.go: options, setup, Default, Validate, Declare (the
//     children, the managed etcd first, then the instances) and Observe;
//   - observe.go: what Declare observes (cluster, which it returns to
//     Observe and the steps): the etcd's and the instances' StatefulSets,
//     pods, gpfdist Services and answers; it writes no status;
//   - status.go: status written from that observation, and one setter per
//     condition (Available; Progressing and Ready, from one verdict);
//   - serving.go: each instance asked ListJobs in the background, the
//     pods' serving condition (their readiness gate) and status.jobs;
//   - scale.go: the scale-in flow (jobs stopped, instances removed, jobs
//     started again);
//   - upgrade.go: the rollout flow, one instance at a time onto the
//     StatefulSet's latest pod template;
//   - jobs.go: the calls of GPSS's job API through the gRPC Service;
//   - webhook.go: the admission webhooks and the children they dry-run;
//   - delete.go: Finalize, honoring the managed etcd's reclaim policy.
//
// docs/gpss.md gives the design and its decisions.
//
// Subpackages:
//   - build holds the pure builders of the children, with no client;
//   - gpssconfig is GPSS's gpss.json: validation, rendering, parsing;
//   - gpssapi is GPSS's gRPC APIs (job and batch data);
//   - simulator is the GPSS simulator the tests run in GPSS's place
//     (cmd/gpss-simulator), which the controller does not depend on;
//   - gpsstest starts a real etcd and simulated instances for tests.
package gpss
