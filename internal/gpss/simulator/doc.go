// Package simulator is Steward's GPSS simulator. It is NOT GPSS: GPSS is
// proprietary and cannot run here, so Steward's tests run this in its place,
// in real pods, against a real etcd.
//
// What it shares with GPSS is the surface Steward's controller uses: it
// reads gpss.json with GPSS's rules (gpssconfig.Parse: keys in any letter
// case; it refuses to start on invalid JSON or a cluster without
// Cluster.Id), serves GPSS's gRPC job API
// (gpss.JobService: submit, start, stop, list, remove) and a subset of its
// Batch Data API (api.Gpss: connect, open, write, close) on
// ListenAddress.Port, and answers Greenplum segments on Gpfdist.Port for the
// jobs it runs.
//
// What it models, in ways GPSS does not document (docs/gpss.md says which):
//   - The instances of a cluster (same Cluster.Id) coordinate through etcd
//     under keys of the simulator's own (layout.go): each instance holds a
//     key with a lease while it runs; a job is a key any instance can read
//     and change, so a request to any instance reaches the job.
//   - Each running job is run by exactly one instance, named in the job's
//     owner key. A started job goes to the live instance with the fewest
//     jobs. A job stays with its instance's name: when that instance is
//     gone its jobs report JOB_ERROR until an instance of the same name
//     (a re-created pod) comes back and resumes them. There is no
//     reassignment on loss, so an operator must move jobs itself. An
//     instance whose lease runs out while it runs (paused, or cut off from
//     etcd) registers again, and its jobs run again.
//   - Stopping a job is done by its instance, which may take a while
//     (Knobs.StopDelay).
//
// Knobs (environment variables, see Knobs) make a start fail, a stop slow,
// or a version refuse a configuration, for tests of halted upgrades.
//
// +steward:role=testing
package simulator
