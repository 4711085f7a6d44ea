// Package scale holds the scale benchmark (build tag bench; make
// bench-scale): BenchmarkScale/<System> creates SCALE_CLUSTERS clusters of
// one system (default 1000, each the smallest of its usual shape: see
// kinds_test.go), and BenchmarkScale/Mixed as many of every system at
// once, an equal share each, with every pod on localkube's simulated
// (kwok) nodes, holds them idle for SCALE_IDLE (default 2m), then deletes
// them. Pods on simulated nodes become Ready
// without running and their addresses lead nowhere, so every server is
// unreachable, as in a network partition: what the operator costs when it
// cannot reach a thousand clusters. It prints figures and asserts nothing
// about time:
//
//   - create: the API server's own rate, max(N, 2000) ConfigMaps created
//     by 32 concurrent requests of an unthrottled client in the same run
//     (api-creates/s); the time from the first create of a cluster until
//     every cluster's StatefulSets exist (s-to-all-statefulsets) and are
//     ready, every replica Ready as kwok makes them (s-to-all-ready);
//     clusters/s, N divided by s-to-all-ready; and clusters/api-create,
//     clusters/s divided by api-creates/s: how many plain creates the API
//     server serves in the time the operator, the controller manager, the
//     scheduler and the provisioner take to bring up one cluster's worth;
//     per cluster, the times from its create to its StatefulSets and to
//     ready (p50, p99, max); per pod, the time after its StatefulSet
//     existed until it was created, its claims bound, it was scheduled,
//     and Ready: which of the cluster's parts took the rest;
//   - the operator's API requests per created cluster (its client's
//     rest_client_requests_total, by method and code) against the kind's
//     written budget (budget-requests/cluster), those answered 409
//     and 404, and the same per deleted cluster; the API server's own
//     409s and 404s by verb, resource and subresource (its
//     apiserver_request_total, every client's); and, from localkube's
//     audit log, each of the operator's requests by verb, resource and
//     answer, with the names they touched (<cluster> for a cluster's
//     name) and a message of each failing kind;
//   - idle, once nothing has changed for 30 s (at most 5 min after every
//     StatefulSet is ready): the operator's requests per minute, its
//     writes beyond leader election, changes of the clusters and of their
//     children (watches, with what changed in the status of the first
//     few), lease renewals; and each minute of the window, the operator's
//     CPU, passes and probe calls, which fall as the partition lasts
//     (cores-idle-last-min is the last minute's CPU);
//   - in each phase, each controller's workqueue: adds, the wait (p50 and
//     p99 from workqueue_queue_duration_seconds' buckets over the phase;
//     the worst controller's as the headline) and the work, the passes by
//     result, the framework's actions, probe calls and the probe answers
//     that changed (each starts a pass);
//   - memory: the operator's RSS and Go heap with no cluster of the run,
//     with all created and after idle, and per cluster; where the RSS after
//     idle goes by the Go runtime (heap in use, heap free not yet returned,
//     stacks, the runtime's own, the next collection's goal); etcd's database size
//     and the cluster's processes' RSS (read from /proc through
//     localkube's PID files);
//   - CPU: the operator's CPU seconds in each phase (its own process's),
//     per created or deleted cluster and per idle cluster-minute, and the
//     cores each of the cluster's processes used;
//   - delete: the time from deleting every cluster (one delete-collection)
//     until all are gone, and until their pods and claims are;
//   - with SCALE_PROFILES (make bench-scale sets it), the operator's Go
//     profiles: CPU for 30 s at the start of the creation and within the
//     idle window, the heap once every cluster is ready and after idle,
//     each written there and its top printed;
//   - every change of one cluster (SCALE_TRACE, the run's first by
//     default), its parts and its children, with what changed in their
//     status: what its creation wrote, one write at a time.
//
// A kind is one entry in kinds (kinds_test.go): how to build one small
// cluster whose pods go to simulated nodes, its controllers, how many
// StatefulSets and pods one has while no server answers, and the parts
// between it and them (MatrixOne's sets).
package scale
