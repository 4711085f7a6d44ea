package simulator_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/internal/gpss/gpssapi/batch"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
)

// instance is one simulator running in the test process, with clients of
// its gRPC APIs.
type instance struct {
	*gpsstest.Simulator
	jobs  job.JobServiceClient
	batch batch.GpssClient
}

func start(t *testing.T, etcd, cluster, name string, knobs simulator.Knobs) *instance {
	t.Helper()
	s := gpsstest.RunSimulator(t, etcd, cluster, name, knobs)
	conn := gpsstest.Dial(t, s.GRPCAddr)
	return &instance{Simulator: s, jobs: job.NewJobServiceClient(conn), batch: batch.NewGpssClient(conn)}
}

func byName(name string) *job.JobIdentifier {
	return &job.JobIdentifier{Unit: &job.JobIdentifier_JobName{JobName: name}}
}

func statuses(t *testing.T, in *instance) map[string]job.JobStatusCode {
	t.Helper()
	resp, err := in.jobs.ListJobs(context.Background(), &job.ListJobRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]job.JobStatusCode{}
	for _, info := range resp.GetJobInfos() {
		out[info.GetName()] = info.GetStatus().GetCode()
	}
	return out
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func gpfdist(t *testing.T, addr, path, proto string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/"+path, http.NoBody)
	if proto != "" {
		req.Header.Set("X-GP-PROTO", proto)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func TestJobsRunOnOneInstanceEachAndFollowTheirInstance(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	ctx := context.Background()
	a := start(t, etcd, "c1", "gpss-0", simulator.Knobs{})
	b := start(t, etcd, "c1", "gpss-1", simulator.Knobs{})
	c := start(t, etcd, "c1", "gpss-2", simulator.Knobs{})
	// Another cluster on the same etcd sees none of c1's jobs.
	other := start(t, etcd, "c2", "gpss-0", simulator.Knobs{})

	names := []string{"orders", "clicks", "payments", "audit"}
	for _, n := range names {
		if _, err := a.jobs.SubmitJob(ctx, &job.SubmitJobRequest{JobOption: &job.JobOption{Name: n},
			Target: &job.Target{Unit: &job.Target_Gpdb{Gpdb: &job.GPDBTarget{Host: "gp", Port: 5432, Table: n}}}}); err != nil {
			t.Fatalf("submit %s: %v", n, err)
		}
	}
	if _, err := b.jobs.SubmitJob(ctx, &job.SubmitJobRequest{JobOption: &job.JobOption{Name: "orders"}}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("a second job named orders: %v, want AlreadyExists", err)
	}
	for _, code := range statuses(t, c) {
		if code != job.JobStatusCode_JOB_STOPPED {
			t.Errorf("a submitted job is %v, want JOB_STOPPED until started", code)
		}
	}
	if got := statuses(t, other); len(got) != 0 {
		t.Errorf("cluster c2 lists c1's jobs: %v", got)
	}
	// Started through another instance than the one that took them.
	for _, n := range names {
		if _, err := b.jobs.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byName(n)}); err != nil {
			t.Fatalf("start %s: %v", n, err)
		}
	}
	for n, code := range statuses(t, c) {
		if code != job.JobStatusCode_JOB_RUNNING {
			t.Errorf("%s is %v after StartJob returned, want JOB_RUNNING", n, code)
		}
	}
	own := gpsstest.JobOwners(t, etcd, "c1")
	load := map[string]int{}
	for _, n := range names {
		load[own[n]]++
	}
	if len(own) != 4 || load["gpss-0"] > 2 || load["gpss-1"] > 2 || load["gpss-2"] > 2 || load[""] > 0 {
		t.Errorf("jobs by instance %v (owners %v): want each of the 4 jobs on one instance, at most 2 on any", load, own)
	}

	// gpfdist: only the job's instance serves it.
	byInstance := map[string]*instance{"gpss-0": a, "gpss-1": b, "gpss-2": c}
	for _, in := range []*instance{a, b, c} {
		code, body := gpfdist(t, in.GpfdistAddr, "orders", "1")
		switch {
		case own["orders"] == in.Name && (code != http.StatusOK || string(body) != "D\x00\x00\x00\x00"):
			t.Errorf("%s runs orders; gpfdist answered %d %q, want 200 and an empty stream", in.Name, code, body)
		case own["orders"] != in.Name && code != http.StatusNotFound:
			t.Errorf("%s does not run orders; gpfdist answered %d, want 404", in.Name, code)
		}
	}
	if code, _ := gpfdist(t, a.GpfdistAddr, "orders", ""); code != http.StatusBadRequest {
		t.Errorf("gpfdist without X-GP-PROTO: %d, want 400", code)
	}

	// An instance that goes leaves its jobs in error, and they come back
	// with an instance of the same name.
	lost := byInstance[own["orders"]]
	lost.Stop()
	eventually(t, "orders reports its instance gone", func() error {
		if got := statuses(t, other2(lost, a, b, c))["orders"]; got != job.JobStatusCode_JOB_ERROR {
			return fmt.Errorf("orders is %v", got)
		}
		return nil
	})
	if gpsstest.JobOwners(t, etcd, "c1")["orders"] != lost.Name {
		t.Errorf("orders moved to %s; the simulator does not reassign", gpsstest.JobOwners(t, etcd, "c1")["orders"])
	}
	back := start(t, etcd, "c1", lost.Name, simulator.Knobs{})
	eventually(t, "orders runs again on the re-created instance", func() error {
		if got := statuses(t, back)["orders"]; got != job.JobStatusCode_JOB_RUNNING {
			return fmt.Errorf("orders is %v", got)
		}
		if code, _ := gpfdist(t, back.GpfdistAddr, "orders", "0"); code != http.StatusOK {
			return fmt.Errorf("gpfdist of %s answers %d for orders", back.Name, code)
		}
		return nil
	})

	// Stop and remove, through the instances that run.
	alive := other2(lost, a, b, c)
	if _, err := alive.jobs.RemoveJob(ctx, &job.RemoveJobRequest{JobIdentifier: byName("clicks")}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("removing a running job: %v, want FailedPrecondition", err)
	}
	if _, err := back.jobs.StopJob(ctx, &job.StopJobRequest{JobIdentifier: byName("clicks")}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, alive)["clicks"]; got != job.JobStatusCode_JOB_STOPPED {
		t.Errorf("clicks is %v after StopJob returned", got)
	}
	if _, ok := gpsstest.JobOwners(t, etcd, "c1")["clicks"]; ok {
		t.Error("a stopped job still has an instance")
	}
	if _, err := alive.jobs.RemoveJob(ctx, &job.RemoveJobRequest{JobIdentifier: byName("clicks")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := statuses(t, back)["clicks"]; ok {
		t.Error("a removed job is still listed")
	}
	if _, err := alive.jobs.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byName("clicks")}); status.Code(err) != codes.NotFound {
		t.Errorf("starting a removed job: %v, want NotFound", err)
	}
}

// other2 returns an instance other than lost.
func other2(lost *instance, all ...*instance) *instance {
	for _, in := range all {
		if in != lost {
			return in
		}
	}
	return nil
}

func TestStopWaitsForTheInstance(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	ctx := context.Background()
	slow := start(t, etcd, "c1", "gpss-0", simulator.Knobs{StopDelay: 2 * time.Second})
	if _, err := slow.jobs.SubmitJob(ctx, &job.SubmitJobRequest{JobOption: &job.JobOption{Name: "j"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := slow.jobs.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byName("j")}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if _, err := slow.jobs.StopJob(ctx, &job.StopJobRequest{JobIdentifier: byName("j")}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 2*time.Second {
		t.Errorf("StopJob returned after %s, before the instance's 2s stop", took)
	}
	if got := statuses(t, slow)["j"]; got != job.JobStatusCode_JOB_STOPPED {
		t.Errorf("j is %v", got)
	}
}

func TestBatchDataAPICountsRows(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	ctx := context.Background()
	in := start(t, etcd, "c1", "gpss-0", simulator.Knobs{})
	sess, err := in.batch.Connect(ctx, &batch.ConnectRequest{Host: "gp", Port: 5432, DB: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.batch.Write(ctx, &batch.WriteRequest{Session: sess}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Write before Open: %v", err)
	}
	if _, err := in.batch.Open(ctx, &batch.OpenRequest{Session: sess, SchemaName: "public", TableName: "t"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := in.batch.Write(ctx, &batch.WriteRequest{Session: sess, Rows: []*batch.RowData{{Data: []byte("a")}, {Data: []byte("b")}}}); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := in.batch.Close(ctx, &batch.CloseRequest{Session: sess})
	if err != nil || stats.GetSuccessCount() != 4 {
		t.Errorf("Close: %v, %v; want 4 rows", stats, err)
	}
	if _, err := in.batch.Disconnect(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if _, err := in.batch.Open(ctx, &batch.OpenRequest{Session: sess, TableName: "t"}); status.Code(err) != codes.NotFound {
		t.Errorf("Open after Disconnect: %v, want NotFound", err)
	}
}

func TestNewRefusesWhatGPSSRefuses(t *testing.T) {
	good := `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Id":"c","Etcd":{"Endpoints":["http://e:2379"]},"Legacy":{"Mode":1}}}`
	for _, tc := range []struct {
		name, config string
		knobs        simulator.Knobs
		wantErr      string
	}{
		{name: "good", config: good},
		{name: "invalid JSON", config: `{"ListenAddress":`, wantErr: "unexpected EOF"},
		{name: "no cluster id", config: `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Etcd":{"Endpoints":["e"]}}}`,
			wantErr: "Cluster.Id is empty"},
		{name: "no cluster", config: `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080}}`, wantErr: "no Cluster block"},
		{name: "a version that fails to start", config: good, knobs: simulator.Knobs{FailStart: "cannot start: broken build"},
			wantErr: "cannot start: broken build"},
		{name: "a version that refuses a key", config: good, knobs: simulator.Knobs{Version: "2.1", RefuseKeys: []string{"Cluster.Legacy"}},
			wantErr: "version 2.1 does not accept Cluster.Legacy"},
		{name: "a refused key that is absent", config: good, knobs: simulator.Knobs{RefuseKeys: []string{"Cluster.Other"}}},
		// GPSS reads keys in any letter case, as encoding/json does.
		{name: "a refused key in another letter case", config: strings.Replace(good, `"Legacy"`, `"legacy"`, 1),
			knobs: simulator.Knobs{Version: "2.1", RefuseKeys: []string{"Cluster.Legacy"}}, wantErr: "version 2.1 does not accept Cluster.Legacy"},
		{name: "every key in another letter case",
			config: `{"listenaddress":{"port":5000},"GPFDIST":{"Port":8080},"cluster":{"id":"c","etcd":{"endpoints":["http://e:2379"]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulator.New([]byte(tc.config), "gpss-0", tc.knobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestInstanceReportsItsVersion: what an instance says of its version
// (gpfdist's X-GPFDIST-VERSION, on every answer) is its knob's, so that an
// upgrade to another image shows in the instances themselves.
func TestInstanceReportsItsVersion(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	for _, version := range []string{"1.0", "1.1"} {
		in := start(t, etcd, "c-"+version, "gpss-0", simulator.Knobs{Version: version})
		for _, proto := range []string{"1", ""} { // a job it does not run; no X-GP-PROTO
			req, _ := http.NewRequest(http.MethodGet, "http://"+in.GpfdistAddr+"/nothing", http.NoBody)
			if proto != "" {
				req.Header.Set("X-GP-PROTO", proto)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got, want := resp.Header.Get("X-GPFDIST-VERSION"), "gpss-simulator "+version; got != want {
				t.Errorf("X-GPFDIST-VERSION of version %s (HTTP %d): %q, want %q", version, resp.StatusCode, got, want)
			}
		}
	}
}

func TestKnobsFromEnv(t *testing.T) {
	env := map[string]string{"GPSS_SIM_VERSION": "2.0.1", "GPSS_SIM_STOP_DELAY": "1.5s", "GPSS_SIM_REFUSE_KEYS": "A.B, C"}
	k, err := simulator.KnobsFromEnv(func(k string) string { return env[k] })
	if err != nil || k.Version != "2.0.1" || k.StopDelay != 1500*time.Millisecond || strings.Join(k.RefuseKeys, "|") != "A.B|C" {
		t.Errorf("KnobsFromEnv: %+v, %v", k, err)
	}
	if _, err := simulator.KnobsFromEnv(func(k string) string { return map[string]string{"GPSS_SIM_STOP_DELAY": "soon"}[k] }); err == nil {
		t.Error("a stop delay that is not a duration was accepted")
	}
}

// TestInstancesAgreeAfterAScaleOut starts jobs on two instances, then a
// third joins: every instance, the new one at once, lists every job in the
// same state (each answers ListJobs from one read of the cluster's keys in
// etcd; a job does not move when an instance joins).
func TestInstancesAgreeAfterAScaleOut(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	a, b := start(t, etcd, "agree", "a", simulator.Knobs{}), start(t, etcd, "agree", "b", simulator.Knobs{})
	for _, name := range []string{"j1", "j2", "j3", "idle"} {
		if _, err := a.jobs.SubmitJob(context.Background(), &job.SubmitJobRequest{JobOption: &job.JobOption{Name: name}}); err != nil {
			t.Fatal(err)
		}
		if name == "idle" {
			continue
		}
		if _, err := b.jobs.StartJob(context.Background(), &job.StartJobRequest{JobIdentifier: byName(name)}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]job.JobStatusCode{"j1": job.JobStatusCode_JOB_RUNNING, "j2": job.JobStatusCode_JOB_RUNNING,
		"j3": job.JobStatusCode_JOB_RUNNING, "idle": job.JobStatusCode_JOB_STOPPED}
	eventually(t, "the jobs run", func() error {
		if got := statuses(t, a); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
	c := start(t, etcd, "agree", "c", simulator.Knobs{})
	for range 20 {
		for _, in := range []*instance{c, a, b} {
			if got := statuses(t, in); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("instance %s lists %v after c joined, want %v", in.Name, got, want)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLostLeaseRegistersAgainSeed20261202 is what chaos seed 20261202 found
// at step 3 (an instance frozen for 17 s): the instance's lease ran out
// while it was stopped, and thawed, it went on serving its job on gpfdist
// with no key in etcd, so the API reported the job JOB_ERROR for good. An
// instance whose lease ends registers again, and its jobs run again.
func TestLostLeaseRegistersAgainSeed20261202(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	ctx := context.Background()
	a := start(t, etcd, "c1", "gpss-0", simulator.Knobs{})
	if _, err := a.jobs.SubmitJob(ctx, &job.SubmitJobRequest{JobOption: &job.JobOption{Name: "orders"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.jobs.StartJob(ctx, &job.StartJobRequest{JobIdentifier: byName("orders")}); err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := simulator.Root + "/c1/instances/gpss-0"
	got, err := c.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("the instance's key: %v, %v", got, err)
	}
	// What a pause longer than the lease does: etcd ends the lease, and
	// the instance's key goes with it.
	if _, err := c.Revoke(ctx, clientv3.LeaseID(got.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance registered again under a new lease", func() error {
		now, err := c.Get(ctx, key)
		switch {
		case err != nil:
			return err
		case len(now.Kvs) != 1:
			return fmt.Errorf("no key %s", key)
		case now.Kvs[0].Lease == got.Kvs[0].Lease:
			return fmt.Errorf("still the revoked lease %x", now.Kvs[0].Lease)
		}
		return nil
	})
	eventually(t, "orders runs again, on its instance", func() error {
		if code := statuses(t, a)["orders"]; code != job.JobStatusCode_JOB_RUNNING {
			return fmt.Errorf("orders is %v", code)
		}
		if code, _ := gpfdist(t, a.GpfdistAddr, "orders", "1"); code != http.StatusOK {
			return fmt.Errorf("gpfdist answers %d for orders", code)
		}
		return nil
	})
}
