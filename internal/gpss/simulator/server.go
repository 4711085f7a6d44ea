package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/batch"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
	"github.com/stewardhq/steward/internal/gpss/gpssconfig"
)

// leaseTTL is how long (seconds) an instance's key outlives the instance.
const leaseTTL = 3

// resync is how often an instance looks at every job even when etcd
// reported no change.
const resync = time.Second

// Server is one simulated GPSS instance.
type Server struct {
	cfg   gpssconfig.Config
	name  string
	knobs Knobs
	etcd  *clientv3.Client
	log   *slog.Logger

	mu       sync.Mutex
	running  map[string]Job // the jobs this instance runs, by id
	stopping map[string]bool
	sessions map[string]*session // Batch Data API sessions, by id
}

// New checks a gpss.json (as GPSS does, then against the knobs) and returns
// the instance name would run with it. It does not connect yet.
func New(rawConfig []byte, name string, knobs Knobs, log *slog.Logger) (*Server, error) {
	if knobs.FailStart != "" {
		return nil, errors.New(knobs.FailStart)
	}
	cfg, err := gpssconfig.Parse(rawConfig)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster == nil {
		return nil, errors.New("gpss.json: no Cluster block; the simulator only runs as a cluster member")
	}
	if refused := refusedKeys(rawConfig, knobs.RefuseKeys); len(refused) > 0 {
		return nil, fmt.Errorf("gpss.json: version %s does not accept %s", knobs.Version, strings.Join(refused, ", "))
	}
	if name == "" {
		return nil, errors.New("an instance needs a name")
	}
	return &Server{cfg: cfg, name: name, knobs: knobs, log: log.With("instance", name, "cluster", cfg.Cluster.ID),
		running: map[string]Job{}, stopping: map[string]bool{}, sessions: map[string]*session{}}, nil
}

// refusedKeys are the keys of raw this version refuses, found in any
// letter case, as GPSS reads its keys (gpssconfig.Find).
func refusedKeys(raw []byte, keys []string) []string {
	var doc map[string]any
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	var found []string
	for _, key := range keys {
		if len(gpssconfig.Find(doc, key)) > 0 {
			found = append(found, key)
		}
	}
	return found
}

// Run serves gRPC on grpcLis and gpfdist on gpfdistLis (nil: listen on
// the configured ports), publishes the instance in etcd and runs its jobs
// until ctx ends.
func (s *Server) Run(ctx context.Context, grpcLis, gpfdistLis net.Listener) error {
	var err error
	if grpcLis == nil {
		if grpcLis, err = net.Listen("tcp", fmt.Sprintf(":%d", s.cfg.ListenAddress.Port)); err != nil {
			return err
		}
	}
	if gpfdistLis == nil {
		if gpfdistLis, err = net.Listen("tcp", fmt.Sprintf(":%d", s.cfg.Gpfdist.Port)); err != nil {
			return err
		}
	}
	s.etcd, err = clientv3.New(clientv3.Config{Endpoints: s.cfg.Cluster.Etcd.Endpoints, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd %v: %w", s.cfg.Cluster.Etcd.Endpoints, err)
	}
	defer s.etcd.Close()
	first, lost, err := s.register(ctx)
	if err != nil {
		return err
	}
	var lease atomic.Int64
	lease.Store(int64(first))
	go s.stayRegistered(ctx, lost, &lease)

	grpcServer := grpc.NewServer()
	job.RegisterJobServiceServer(grpcServer, &jobService{s: s})
	batch.RegisterGpssServer(grpcServer, &batchService{s: s})
	httpServer := &http.Server{Handler: http.HandlerFunc(s.serveGpfdist), ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 3)
	go func() { errs <- grpcServer.Serve(grpcLis) }()
	go func() { errs <- httpServer.Serve(gpfdistLis) }()
	go func() { errs <- s.runJobs(ctx) }()
	s.log.Info("Serving", "grpc", grpcLis.Addr().String(), "gpfdist", gpfdistLis.Addr().String(), "version", s.knobs.Version)

	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
	}
	grpcServer.Stop()
	_ = httpServer.Close()
	// Leave at once rather than when the lease runs out.
	revokeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.etcd.Revoke(revokeCtx, clientv3.LeaseID(lease.Load()))
	s.log.Info("Stopped")
	return err
}

// stayRegistered registers the instance again each time its lease runs
// out while it runs (a pause or a partition longer than leaseTTL, an etcd
// that was gone): meanwhile its key is gone and the API reports its jobs
// JOB_ERROR; registered again, its jobs are its own and run again, as
// when an instance of its name comes back. It stores each new lease in
// lease, for Run's revoke.
func (s *Server) stayRegistered(ctx context.Context, lost <-chan struct{}, lease *atomic.Int64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
		}
		s.log.Warn("The etcd lease ran out: registering again")
		for {
			id, next, err := s.register(ctx)
			if err == nil {
				lease.Store(int64(id))
				lost = next
				s.log.Info("Registered again", "lease", int64(id))
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("Registering again failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// register publishes the instance under a lease kept alive while it runs;
// lost is closed if the lease ends while ctx has not.
func (s *Server) register(ctx context.Context) (lease clientv3.LeaseID, lost <-chan struct{}, err error) {
	grant, err := s.etcd.Grant(ctx, leaseTTL)
	if err != nil {
		return 0, nil, fmt.Errorf("etcd lease: %w", err)
	}
	value, _ := json.Marshal(Instance{Name: s.name, Version: s.knobs.Version, Started: time.Now().UTC()})
	if _, err := s.etcd.Put(ctx, instanceKey(s.cluster(), s.name), string(value), clientv3.WithLease(grant.ID)); err != nil {
		return 0, nil, fmt.Errorf("etcd: register %s: %w", s.name, err)
	}
	alive, err := s.etcd.KeepAlive(ctx, grant.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("etcd lease keep-alive: %w", err)
	}
	ended := make(chan struct{})
	go func() {
		for range alive { // drain the keep-alive answers
		}
		// The channel closes when the lease expired or was revoked, or
		// when ctx ended (a stop, not a loss).
		if ctx.Err() == nil {
			close(ended)
		}
	}()
	return grant.ID, ended, nil
}

func (s *Server) cluster() string { return s.cfg.Cluster.ID }

// runJobs reconciles this instance's share of the jobs on every change in
// etcd and every resync.
func (s *Server) runJobs(ctx context.Context) error {
	changes := s.etcd.Watch(ctx, clusterPrefix(s.cluster()), clientv3.WithPrefix())
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("Reconciling jobs failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-tick.C:
		}
	}
}

// state is one consistent read of a cluster's keys.
type state struct {
	instances map[string]Instance
	jobs      map[string]Job
	names     map[string]string // job name -> id
	owners    map[string]string // job id -> instance
	status    map[string]Status
	revision  int64
}

func (s *Server) read(ctx context.Context) (*state, error) {
	prefix := clusterPrefix(s.cluster())
	resp, err := s.etcd.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	st := &state{instances: map[string]Instance{}, jobs: map[string]Job{}, names: map[string]string{},
		owners: map[string]string{}, status: map[string]Status{}, revision: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		kind, id, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
		var err error
		switch kind {
		case "instances":
			var in Instance
			err = json.Unmarshal(kv.Value, &in)
			st.instances[id] = in
		case "jobs":
			var j Job
			err = json.Unmarshal(kv.Value, &j)
			st.jobs[id] = j
		case "names":
			st.names[id] = string(kv.Value)
		case "owners":
			st.owners[id] = string(kv.Value)
		case "status":
			var js Status
			err = json.Unmarshal(kv.Value, &js)
			st.status[id] = js
		}
		if err != nil {
			return nil, fmt.Errorf("etcd %s: %w", kv.Key, err)
		}
	}
	return st, nil
}

// reconcile runs the jobs this instance owns and should run, stops those it
// owns and should not, and takes the jobs that should run and have no
// instance when it has the fewest jobs of the live instances.
func (s *Server) reconcile(ctx context.Context) error {
	st, err := s.read(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(st.jobs)) {
		j, owner := st.jobs[id], st.owners[id]
		switch {
		case owner == s.name && j.Run:
			errs = append(errs, s.runJob(ctx, st, j))
		case owner == s.name && !j.Run:
			s.stopJob(j)
		case owner == "" && j.Run && s.leastLoaded(st):
			errs = append(errs, s.claim(ctx, st, j))
		}
	}
	// Jobs removed while this instance ran them.
	s.mu.Lock()
	for id := range s.running {
		if _, ok := st.jobs[id]; !ok {
			delete(s.running, id)
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

func (s *Server) leastLoaded(st *state) bool {
	load := map[string]int{}
	for name := range st.instances {
		load[name] = 0
	}
	for id, owner := range st.owners {
		if _, live := st.instances[owner]; live && st.jobs[id].Run {
			load[owner]++
		}
	}
	mine, ok := load[s.name]
	if !ok {
		return false
	}
	for name, n := range load {
		if n < mine || (n == mine && name < s.name) {
			return false
		}
	}
	return true
}

func (s *Server) claim(ctx context.Context, st *state, j Job) error {
	key := ownerKey(s.cluster(), j.ID)
	resp, err := s.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, s.name)).Commit()
	if err != nil || !resp.Succeeded {
		return err
	}
	s.log.Info("Took job", "job", j.Name, "id", j.ID)
	return s.runJob(ctx, st, j)
}

func (s *Server) runJob(ctx context.Context, st *state, j Job) error {
	s.mu.Lock()
	_, already := s.running[j.ID]
	s.running[j.ID] = j
	s.mu.Unlock()
	if cur, ok := st.status[j.ID]; already && ok && cur.Code == job.JobStatusCode_JOB_RUNNING && cur.Instance == s.name {
		return nil
	}
	if !already {
		s.log.Info("Running job", "job", j.Name, "id", j.ID)
	}
	return s.setStatus(ctx, j.ID, job.JobStatusCode_JOB_RUNNING, "running on "+s.name)
}

// stopJob stops j after the knob's delay, then gives it up.
func (s *Server) stopJob(j Job) {
	s.mu.Lock()
	if s.stopping[j.ID] {
		s.mu.Unlock()
		return
	}
	s.stopping[j.ID] = true
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.stopping, j.ID)
			s.mu.Unlock()
		}()
		time.Sleep(s.knobs.StopDelay)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.mu.Lock()
		delete(s.running, j.ID)
		s.mu.Unlock()
		key := ownerKey(s.cluster(), j.ID)
		if _, err := s.etcd.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(key), "=", s.name)).
			Then(clientv3.OpDelete(key), statusPut(s.cluster(), j.ID, job.JobStatusCode_JOB_STOPPED, "stopped by "+s.name, "")).
			Commit(); err != nil {
			s.log.Warn("Stopping job failed", "job", j.Name, "err", err)
			return
		}
		s.log.Info("Stopped job", "job", j.Name, "id", j.ID)
	}()
}

func (s *Server) setStatus(ctx context.Context, id string, code job.JobStatusCode, msg string) error {
	_, err := s.etcd.Txn(ctx).Then(statusPut(s.cluster(), id, code, msg, s.name)).Commit()
	return err
}

func statusPut(cluster, id string, code job.JobStatusCode, msg, instance string) clientv3.Op {
	value, _ := json.Marshal(Status{Code: code, Message: msg, Time: time.Now().UTC(), Instance: instance})
	return clientv3.OpPut(statusKey(cluster, id), string(value))
}

// runs reports whether this instance runs the job with that id or name.
func (s *Server) runs(idOrName string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, j := range s.running {
		if id == idOrName || j.Name == idOrName {
			return !s.stopping[id]
		}
	}
	return false
}
