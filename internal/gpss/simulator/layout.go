package simulator

import (
	"context"
	"path"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// Root is where the simulator keeps its state in etcd. The layout is its own
// invention (GPSS documents none), under Root/<cluster id>/:
//
//	instances/<name>  an Instance, under the instance's lease: present while it runs
//	jobs/<id>         a Job: what was submitted and whether it should run
//	names/<name>      the id of the job with that name (names are unique)
//	owners/<id>       the name of the instance that runs the job; only while it should run
//	status/<id>       the job's Status as its instance last reported it
const Root = "/steward.dev/gpss-simulator"

func clusterPrefix(clusterID string) string { return path.Join(Root, clusterID) + "/" }

func instanceKey(cluster, name string) string { return clusterPrefix(cluster) + "instances/" + name }
func jobKey(cluster, id string) string        { return clusterPrefix(cluster) + "jobs/" + id }
func nameKey(cluster, name string) string     { return clusterPrefix(cluster) + "names/" + name }
func ownerKey(cluster, id string) string      { return clusterPrefix(cluster) + "owners/" + id }
func statusKey(cluster, id string) string     { return clusterPrefix(cluster) + "status/" + id }

// Instance is what a running instance publishes about itself.
type Instance struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
}

// Job is a submitted job. Its Target and Source are kept as submitted
// (protobuf JSON).
type Job struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Target []byte `json:"target,omitempty"`
	Source []byte `json:"source,omitempty"`
	// Run says whether the job should run: set by StartJob, cleared by
	// StopJob.
	Run bool `json:"run"`
}

// Status is a job's state as its instance reports it.
type Status struct {
	Code     job.JobStatusCode `json:"code"`
	Message  string            `json:"message,omitempty"`
	Time     time.Time         `json:"time"`
	Instance string            `json:"instance,omitempty"`
}

// JobOwners reads which instance runs each job, by job name, from the
// simulator's own keys in etcd. No GPSS API says it, so the controller
// never asks: this is for tests of the simulator and of the operator's
// moves of jobs.
func JobOwners(ctx context.Context, etcd *clientv3.Client, clusterID string) (map[string]string, error) {
	prefix := clusterPrefix(clusterID)
	resp, err := etcd.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	names, owners := map[string]string{}, map[string]string{}
	for _, kv := range resp.Kvs {
		if name, ok := strings.CutPrefix(string(kv.Key), prefix+"names/"); ok {
			names[string(kv.Value)] = name
		}
	}
	for _, kv := range resp.Kvs {
		if id, ok := strings.CutPrefix(string(kv.Key), prefix+"owners/"); ok {
			owners[names[id]] = string(kv.Value)
		}
	}
	return owners, nil
}
