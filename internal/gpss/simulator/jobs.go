package simulator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// settle bounds how long StartJob and StopJob wait for the job's instance
// to act, as gpsscli start and stop wait.
const settle = 30 * time.Second

// jobService is GPSS's job API on one instance: every call reads and
// changes the cluster's jobs in etcd, so any instance answers for all.
type jobService struct {
	job.UnimplementedJobServiceServer
	s *Server
}

func (js *jobService) SubmitJob(ctx context.Context, req *job.SubmitJobRequest) (*job.SubmitJobResponse, error) {
	s := js.s
	id := newID()
	j := Job{ID: id, Name: req.GetJobOption().GetName()}
	if j.Name == "" {
		j.Name = "job-" + id[:8]
	}
	var err error
	if j.Target, err = protojson.Marshal(req.GetTarget()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "target: %v", err)
	}
	if j.Source, err = protojson.Marshal(req.GetSource()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "source: %v", err)
	}
	value, _ := json.Marshal(j)
	name := nameKey(s.cluster(), j.Name)
	resp, err := s.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(name), "=", 0)).
		Then(clientv3.OpPut(name, id), clientv3.OpPut(jobKey(s.cluster(), id), string(value)),
			statusPut(s.cluster(), id, job.JobStatusCode_JOB_STOPPED, "submitted", "")).
		Commit()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "etcd: %v", err)
	}
	if !resp.Succeeded {
		return nil, status.Errorf(codes.AlreadyExists, "a job named %q exists", j.Name)
	}
	s.log.Info("Submitted job", "job", j.Name, "id", id)
	return &job.SubmitJobResponse{JobId: id, JobName: j.Name, Message: "submitted"}, nil
}

func (js *jobService) StartJob(ctx context.Context, req *job.StartJobRequest) (*job.StartJobResponse, error) {
	j, err := js.setRun(ctx, req.GetJobIdentifier(), true)
	if err != nil {
		return nil, err
	}
	err = js.wait(ctx, func(st *state) bool {
		return st.owners[j.ID] != "" && effectiveStatus(st, j.ID).Code == job.JobStatusCode_JOB_RUNNING
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "job %s did not start: %v", j.Name, err)
	}
	return &job.StartJobResponse{}, nil
}

func (js *jobService) StopJob(ctx context.Context, req *job.StopJobRequest) (*job.StopJobResponse, error) {
	s := js.s
	j, err := js.setRun(ctx, req.GetJobIdentifier(), false)
	if err != nil {
		return nil, err
	}
	// A job whose instance is gone has nobody to stop it: it is stopped.
	st, err := s.read(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "etcd: %v", err)
	}
	if owner := st.owners[j.ID]; owner == "" || !st.live(owner) {
		key := ownerKey(s.cluster(), j.ID)
		if _, err := s.etcd.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", owner)).
			Then(clientv3.OpDelete(key), statusPut(s.cluster(), j.ID, job.JobStatusCode_JOB_STOPPED, "stopped", "")).
			Commit(); err != nil {
			return nil, status.Errorf(codes.Unavailable, "etcd: %v", err)
		}
	}
	if err := js.wait(ctx, func(st *state) bool { return st.owners[j.ID] == "" }); err != nil {
		return nil, status.Errorf(codes.DeadlineExceeded, "job %s did not stop: %v", j.Name, err)
	}
	return &job.StopJobResponse{}, nil
}

func (js *jobService) RemoveJob(ctx context.Context, req *job.RemoveJobRequest) (*job.RemoveJobResponse, error) {
	s := js.s
	st, j, err := js.find(ctx, req.GetJobIdentifier())
	if err != nil {
		return nil, err
	}
	if j.Run || st.owners[j.ID] != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "job %s runs: stop it first", j.Name)
	}
	if _, err := s.etcd.Txn(ctx).Then(clientv3.OpDelete(jobKey(s.cluster(), j.ID)),
		clientv3.OpDelete(nameKey(s.cluster(), j.Name)), clientv3.OpDelete(statusKey(s.cluster(), j.ID))).Commit(); err != nil {
		return nil, status.Errorf(codes.Unavailable, "etcd: %v", err)
	}
	s.log.Info("Removed job", "job", j.Name, "id", j.ID)
	return &job.RemoveJobResponse{}, nil
}

func (js *jobService) ListJobs(ctx context.Context, req *job.ListJobRequest) (*job.ListJobResponse, error) {
	st, err := js.s.read(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "etcd: %v", err)
	}
	ids := slices.Sorted(maps.Keys(st.jobs))
	if wanted := req.GetJobIdentifiers(); len(wanted) > 0 {
		ids = nil
		for _, w := range wanted {
			if id := st.resolve(w); id != "" {
				ids = append(ids, id)
			}
		}
	}
	resp := &job.ListJobResponse{}
	for _, id := range ids {
		resp.JobInfos = append(resp.JobInfos, jobInfo(st, st.jobs[id]))
	}
	return resp, nil
}

func (js *jobService) GetJobStatus(ctx context.Context, req *job.GetJobStatusRequest) (*job.GetJobStatusResponse, error) {
	st, j, err := js.find(ctx, req.GetJobIdentifier())
	if err != nil {
		return nil, err
	}
	return &job.GetJobStatusResponse{Status: jobInfo(st, j).GetStatus()}, nil
}

func (js *jobService) find(ctx context.Context, ident *job.JobIdentifier) (*state, Job, error) {
	st, err := js.s.read(ctx)
	if err != nil {
		return nil, Job{}, status.Errorf(codes.Unavailable, "etcd: %v", err)
	}
	id := st.resolve(ident)
	if id == "" {
		return nil, Job{}, status.Errorf(codes.NotFound, "no job %s", describe(ident))
	}
	return st, st.jobs[id], nil
}

// setRun sets whether the job should run, unless another change came
// between the read and the write (then it reads again).
func (js *jobService) setRun(ctx context.Context, ident *job.JobIdentifier, run bool) (Job, error) {
	s := js.s
	for {
		st, j, err := js.find(ctx, ident)
		if err != nil {
			return Job{}, err
		}
		if j.Run == run {
			return j, nil
		}
		j.Run = run
		value, _ := json.Marshal(j)
		key := jobKey(s.cluster(), j.ID)
		resp, err := s.etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "<", st.revision+1)).
			Then(clientv3.OpPut(key, string(value))).Commit()
		if err != nil {
			return Job{}, status.Errorf(codes.Unavailable, "etcd: %v", err)
		}
		if resp.Succeeded {
			verb := map[bool]string{true: "Starting job", false: "Stopping job"}[run]
			s.log.Info(verb, "job", j.Name, "id", j.ID)
			return j, nil
		}
	}
}

// wait polls the cluster's state until done holds, ctx ends or settle
// passes.
func (js *jobService) wait(ctx context.Context, done func(*state) bool) error {
	ctx, cancel := context.WithTimeout(ctx, settle)
	defer cancel()
	for {
		st, err := js.s.read(ctx)
		if err == nil && done(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (st *state) live(instance string) bool {
	_, ok := st.instances[instance]
	return ok
}

func (st *state) resolve(ident *job.JobIdentifier) string {
	if id := ident.GetJobId(); id != "" {
		if _, ok := st.jobs[id]; ok {
			return id
		}
		return ""
	}
	return st.names[ident.GetJobName()]
}

// effectiveStatus is a job's status as a client should see it: what its
// instance reported, unless the job should run and its instance is gone.
func effectiveStatus(st *state, id string) Status {
	j, owner, cur := st.jobs[id], st.owners[id], st.status[id]
	switch {
	case j.Run && owner != "" && !st.live(owner):
		return Status{Code: job.JobStatusCode_JOB_ERROR, Message: fmt.Sprintf("instance %s is not running", owner), Time: cur.Time}
	case j.Run && owner == "":
		return Status{Code: job.JobStatusCode_JOB_UNSPECIFIED, Message: "waiting for an instance", Time: cur.Time}
	}
	return cur
}

func jobInfo(st *state, j Job) *job.JobInfo {
	es := effectiveStatus(st, j.ID)
	info := &job.JobInfo{Id: j.ID, Name: j.Name, Target: &job.Target{}, Source: &job.Source{},
		Status: &job.JobStatus{Code: es.Code, Msg: es.Message, Time: timestamppb.New(es.Time)}}
	_ = protojson.Unmarshal(j.Target, info.Target)
	_ = protojson.Unmarshal(j.Source, info.Source)
	return info
}

func describe(ident *job.JobIdentifier) string {
	if id := ident.GetJobId(); id != "" {
		return "with id " + id
	}
	return fmt.Sprintf("named %q", ident.GetJobName())
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
