package gpss

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// jobCallTimeout bounds one call of GPSS's job API; StartJob and StopJob
// wait for the job's instance, so theirs is longer.
const (
	jobCallTimeout = 5 * time.Second
	jobMoveTimeout = 20 * time.Second
)

// Dialer connects to a cluster's gRPC endpoint (status.grpcEndpoint, the
// gRPC Service). Tests give one that reaches instances outside a cluster.
type Dialer func(ctx context.Context, g *Cluster) (job.JobServiceClient, func(), error)

// dialService connects to the cluster's gRPC Service, without TLS (the
// listener's Certificate, when the user configures one, is a later
// addition: docs/gpss.md).
func dialService(_ context.Context, g *Cluster) (job.JobServiceClient, func(), error) {
	conn, err := grpc.NewClient(g.Status.GRPCEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("gRPC %s: %w", g.Status.GRPCEndpoint, err)
	}
	return job.NewJobServiceClient(conn), func() { _ = conn.Close() }, nil
}

// jobs is one connection to a cluster's job API.
type jobs struct {
	client job.JobServiceClient
}

// withJobs connects to the cluster's job API, lists the jobs, and calls fn
// with the connection and every job's status code by id.
func (c *Controller) withJobs(ctx *Context, fn func(j *jobs, codes map[string]job.JobStatusCode) error) error {
	client, closeFn, err := c.opts.Dial(ctx, ctx.Obj)
	if err != nil {
		return err
	}
	defer closeFn()
	j := &jobs{client: client}
	codes, err := j.list(ctx)
	if err != nil {
		return err
	}
	return fn(j, codes)
}

// list returns every job's status code by id.
func (j *jobs) list(ctx context.Context) (map[string]job.JobStatusCode, error) {
	ctx, cancel := context.WithTimeout(ctx, jobCallTimeout)
	defer cancel()
	resp, err := j.client.ListJobs(ctx, &job.ListJobRequest{})
	if err != nil {
		return nil, fmt.Errorf("list the jobs: %w", err)
	}
	out := map[string]job.JobStatusCode{}
	for _, info := range resp.GetJobInfos() {
		out[info.GetId()] = info.GetStatus().GetCode()
	}
	return out, nil
}

// withCode returns the ids of the jobs whose status is code, sorted.
func withCode(codes map[string]job.JobStatusCode, code job.JobStatusCode) []string {
	var ids []string
	for id, c := range codes {
		if c == code {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func byID(id string) *job.JobIdentifier {
	return &job.JobIdentifier{Unit: &job.JobIdentifier_JobId{JobId: id}}
}

func (j *jobs) stop(ctx context.Context, id string, _ job.JobStatusCode) error {
	ctx, cancel := context.WithTimeout(ctx, jobMoveTimeout)
	defer cancel()
	if _, err := j.client.StopJob(ctx, &job.StopJobRequest{JobIdentifier: byID(id)}); err != nil {
		return fmt.Errorf("stop job %s: %w", id, err)
	}
	return nil
}

func (j *jobs) start(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, jobMoveTimeout)
	defer cancel()
	if _, err := j.client.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byID(id)}); err != nil {
		return fmt.Errorf("start job %s: %w", id, err)
	}
	return nil
}

// restart starts a job whose status is code; one in error (its instance
// went while it ran) is stopped first, since starting a job that should
// already run changes nothing.
func (j *jobs) restart(ctx context.Context, id string, code job.JobStatusCode) error {
	if code == job.JobStatusCode_JOB_ERROR {
		if err := j.stop(ctx, id, code); err != nil {
			return err
		}
	}
	return j.start(ctx, id)
}
