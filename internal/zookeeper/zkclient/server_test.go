package zkclient_test

// These tests run against real ZooKeeper 3.8.0 servers started by zktest
// (Debian's packages from the image's root filesystem), not a stand-in.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
	"github.com/stewardhq/steward/internal/zookeeper/zktest"
)

// member is the configuration line of a zktest server.
func member(s *zktest.Server) zkclient.Member {
	return zkclient.Member{
		ID: s.ID(), Address: "127.0.0.1", QuorumPort: s.QuorumPort(), ElectionPort: s.ElectionPort(),
		Type: zkclient.Participant, ClientAddress: "127.0.0.1", ClientPort: s.ClientPort(),
	}
}

func targets(servers []*zktest.Server) []probe.Target {
	out := make([]probe.Target, len(servers))
	for i, s := range servers {
		out[i] = probe.Target{Key: s.AdminAddr(), Address: s.AdminAddr()}
	}
	return out
}

// httpClient returns a client whose idle connections are closed at the
// end of the test.
func httpClient(t *testing.T) *http.Client {
	c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// eventually retries f every 200ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	e := zktest.Start(t, 1)
	s := e.Servers()[0]
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	st, err := zkclient.Stat(ctx, httpClient(t), s.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	if st.Role != zkclient.RoleStandalone || st.Version[:6] != "3.8.0-" || st.NodeCount < 4 {
		t.Errorf("Stat() = %+v, want a standalone 3.8.0 server", st)
	}

	if cfg, err := zkclient.Members(ctx, e.ClientAddrs()); !errors.Is(err, zkclient.ErrNoDynamicConfig) {
		t.Errorf("Members() = %+v, %v; want ErrNoDynamicConfig", cfg, err)
	}
}

// TestEnsemble runs one 3-server ensemble through its subtests in order;
// the last one stops servers.
func TestEnsemble(t *testing.T) {
	t.Parallel()
	e := zktest.Start(t, 3)
	servers := e.Servers()
	client := httpClient(t)

	stats := func() map[string]probe.Result[zkclient.Observation] {
		c := probe.NewCollector(probe.Options[zkclient.Observation]{Kind: "ZookeeperClusterTest", CallTimeout: 2 * time.Second, Deadline: 3 * time.Second})
		return observeEnsemble(t.Context(), c, client, targets(servers))
	}
	var leader, followers []*zktest.Server
	byRole := func() error {
		leader, followers = nil, nil
		for _, s := range servers {
			r := stats()[s.AdminAddr()]
			if r.Err != nil {
				return r.Err
			}
			switch r.Value.Stat.Role {
			case zkclient.RoleLeader:
				leader = append(leader, s)
			case zkclient.RoleFollower:
				followers = append(followers, s)
			}
		}
		if len(leader) != 1 || len(followers) != 2 {
			return errors.New("want one leader and two followers")
		}
		return nil
	}

	t.Run("stat", func(t *testing.T) {
		eventually(t, 20*time.Second, "one leader, two followers", byRole)

		// A session on a follower and a write: every server applies the
		// write's zxid and the follower counts the connection.
		conn, _, err := zk.Connect([]string{followers[0].ClientAddr()}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Create("/zkclient-test", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the write's zxid on every server", func() error {
			res := stats()
			want := res[leader[0].AdminAddr()].Value.Stat.LastZxid
			for _, s := range servers {
				r := res[s.AdminAddr()]
				switch {
				case r.Err != nil:
					return r.Err
				case r.Value.Stat.LastZxid == 0 || r.Value.Stat.LastZxid != want:
					return fmt.Errorf("server %d at zxid %s, the leader at %s", s.ID(), r.Value.Stat.LastZxid, want)
				}
			}
			if want.Epoch() == 0 || want.Counter() == 0 {
				return fmt.Errorf("zxid %s has no epoch or no counter", want)
			}
			return nil
		})
		st := stats()[followers[0].AdminAddr()].Value.Stat
		if st.Connections < 1 || st.NodeCount < 5 || st.Version[:6] != "3.8.0-" {
			t.Errorf("follower with a client: %+v", st)
		}
		t.Logf("leader %d, followers %d and %d, zxid %s", leader[0].ID(), followers[0].ID(), followers[1].ID(), st.LastZxid)
	})
	if t.Failed() {
		return
	}

	t.Run("hung server", func(t *testing.T) {
		hung := followers[0]
		if err := hung.Pause(); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = hung.Resume()
			}
		}()

		// The call times out before the deadline: a timeout error.
		c := probe.NewCollector(probe.Options[zkclient.Observation]{Kind: "ZookeeperClusterTest", CallTimeout: 500 * time.Millisecond, Deadline: 2 * time.Second})
		start := time.Now()
		res := observeEnsemble(t.Context(), c, client, targets(servers))
		if took := time.Since(start); took > 2*time.Second+500*time.Millisecond {
			t.Errorf("ObserveEnsemble took %s with a hung server, want at most the 2s deadline", took)
		}
		for _, s := range servers {
			r := res[s.AdminAddr()]
			if s == hung {
				if !errors.Is(r.Err, context.DeadlineExceeded) {
					t.Errorf("hung server: %+v, want a timeout", r)
				}
				continue
			}
			if !r.OK() || (r.Value.Stat.Role != zkclient.RoleLeader && r.Value.Stat.Role != zkclient.RoleFollower) {
				t.Errorf("server %d: %+v, want its stats", s.ID(), r)
			}
		}

		// The deadline passes before the call times out: the call is still
		// pending, and the others answered.
		c = probe.NewCollector(probe.Options[zkclient.Observation]{Kind: "ZookeeperClusterTest", CallTimeout: 5 * time.Second, Deadline: 700 * time.Millisecond})
		start = time.Now()
		res = observeEnsemble(t.Context(), c, client, targets(servers))
		if took := time.Since(start); took > 700*time.Millisecond+500*time.Millisecond {
			t.Errorf("ObserveEnsemble took %s with a hung server, want at most the 700ms deadline", took)
		}
		if r := res[hung.AdminAddr()]; !errors.Is(r.Err, probe.ErrPending) || !r.InFlight {
			t.Errorf("hung server: %+v, want a pending call", r)
		}
		if r := res[leader[0].AdminAddr()]; !r.OK() || r.Value.Stat.Role != zkclient.RoleLeader {
			t.Errorf("leader: %+v", r)
		}

		// Members through the hung server alone ends with the context.
		goroutines := runtime.NumGoroutine()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		_, err := zkclient.Members(ctx, []string{hung.ClientAddr()})
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
			t.Errorf("Members() through a hung server = %v after %s, want the context's deadline after 1s", err, took)
		}
		eventually(t, 5*time.Second, "the client's goroutines end", func() error {
			if n := runtime.NumGoroutine(); n > goroutines {
				return fmt.Errorf("%d goroutines, %d before the call", n, goroutines)
			}
			return nil
		})

		if err := hung.Resume(); err != nil {
			t.Fatal(err)
		}
		resumed = true
		ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := hung.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("reconfig", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		super := zkclient.WithSuperUser(zktest.SuperPassword)
		cfg, err := zkclient.Members(ctx, e.ClientAddrs())
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Members) != 3 || cfg.Version == 0 {
			t.Fatalf("Members() = %+v, want 3 members and a version", cfg)
		}
		for _, s := range servers {
			if m := cfg.Members[s.ID()]; !m.Equal(member(s)) {
				t.Errorf("member %d = %+v, want %+v", s.ID(), m, member(s))
			}
		}
		v3 := cfg.Version

		joiner, err := e.Join(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = joiner.Stop() }()
		st, err := zkclient.Stat(ctx, client, joiner.AdminAddr())
		if err != nil || st.Role != zkclient.RoleFollower {
			t.Errorf("joining server: %+v, %v; want a follower", st, err)
		}

		// Only the super user may reconfigure.
		if _, err := zkclient.AddMember(ctx, e.ClientAddrs()[:3], member(joiner), v3); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("AddMember(unauthenticated) = %v, want %v", err, zk.ErrNoAuth)
		}
		// A stale version changes nothing.
		if _, err := zkclient.AddMember(ctx, e.ClientAddrs()[:3], member(joiner), v3-1, super); !errors.Is(err, zkclient.ErrStaleVersion) {
			t.Errorf("AddMember(stale version) = %v, want ErrStaleVersion", err)
		}
		if cfg, err := zkclient.Members(ctx, e.ClientAddrs()[:3]); err != nil || cfg.Version != v3 || len(cfg.Members) != 3 {
			t.Errorf("after a stale AddMember: %+v, %v; want the 3 members at %#x", cfg, err, v3)
		}

		cfg, err = zkclient.AddMember(ctx, e.ClientAddrs()[:3], member(joiner), v3, super)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Members) != 4 || cfg.Version <= v3 || !cfg.Members[joiner.ID()].Equal(member(joiner)) {
			t.Fatalf("AddMember() = %+v, want 4 members and a version past %#x", cfg, v3)
		}
		v4 := cfg.Version
		// The AdminServers' voting views follow, without a session.
		for _, s := range e.Servers() {
			ids, err := zkclient.VotingView(ctx, nil, s.AdminAddr())
			if err != nil || fmt.Sprint(ids) != "[1 2 3 4]" {
				t.Errorf("VotingView(server %d) = %v, %v; want [1 2 3 4]", s.ID(), ids, err)
			}
		}
		// Every server, the new one too, reports the new configuration.
		for _, s := range e.Servers() {
			got, err := zkclient.Members(ctx, []string{s.ClientAddr()})
			if err != nil || got.Version != v4 || len(got.Members) != 4 {
				t.Errorf("Members() through server %d = %+v, %v; want version %#x", s.ID(), got, err, v4)
			}
		}
		// Adding it again is a no-op, whatever the version says.
		if again, err := zkclient.AddMember(ctx, e.ClientAddrs(), member(joiner), v3, super); err != nil || again.Version != v4 {
			t.Errorf("AddMember() again = %+v, %v; want a no-op at %#x", again, err, v4)
		}

		cfg, err = zkclient.RemoveMember(ctx, e.ClientAddrs(), joiner.ID(), v4, super)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Members) != 3 || cfg.Version <= v4 {
			t.Fatalf("RemoveMember() = %+v, want 3 members and a version past %#x", cfg, v4)
		}
		if _, ok := cfg.Members[joiner.ID()]; ok {
			t.Errorf("RemoveMember() = %+v, still has server %d", cfg, joiner.ID())
		}
		// Removing an absent member is a no-op, whatever the version says.
		if again, err := zkclient.RemoveMember(ctx, e.ClientAddrs()[:3], joiner.ID(), v3, super); err != nil || again.Version != cfg.Version {
			t.Errorf("RemoveMember() again = %+v, %v; want a no-op at %#x", again, err, cfg.Version)
		}
		t.Logf("versions: %#x, then %#x with server %d, then %#x without", v3, v4, joiner.ID(), cfg.Version)
		if err := joiner.Stop(); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("not serving", func(t *testing.T) {
		eventually(t, 20*time.Second, "one leader, two followers", byRole)
		survivor := followers[1]
		for _, s := range []*zktest.Server{leader[0], followers[0]} {
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		eventually(t, 20*time.Second, "the survivor stops serving", func() error {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			_, err = zkclient.Stat(ctx, client, survivor.AdminAddr())
			if !errors.Is(err, zkclient.ErrNotServing) {
				return fmt.Errorf("stat: %w", err)
			}
			return nil
		})
		var cmdErr *zkclient.CommandError
		if !errors.As(err, &cmdErr) || cmdErr.Command != "stat" {
			t.Errorf("not serving: %v, want a *CommandError for stat", err)
		}
		res := stats()
		for _, s := range servers {
			r := res[s.AdminAddr()]
			switch {
			case s == survivor && !errors.Is(r.Err, zkclient.ErrNotServing):
				t.Errorf("survivor: %+v, want ErrNotServing", r)
			case s != survivor && (r.Err == nil || errors.Is(r.Err, zkclient.ErrNotServing)):
				t.Errorf("stopped server %d: %+v, want a connection error", s.ID(), r)
			}
		}

		// Restarted on their data and configuration, like pods, the
		// servers form a quorum again.
		for _, s := range []*zktest.Server{leader[0], followers[0]} {
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		if err := e.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "one leader, two followers after the restart", byRole)
	})
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// observeEnsemble observes the targets through the collector as the
// controller does (zookeeper.ObserveEnsemble), which this package cannot
// import.
func observeEnsemble(ctx context.Context, c *probe.Collector[zkclient.Observation], client *http.Client,
	targets []probe.Target) map[string]probe.Result[zkclient.Observation] {
	return c.Collect(ctx, targets, func(ctx context.Context, t probe.Target) (zkclient.Observation, error) {
		return zkclient.Observe(ctx, client, t.Address)
	})
}
