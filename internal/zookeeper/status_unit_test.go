package zookeeper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// TestEnsembleRevision: the probe targets' shared Revision changes when any
// server pod changes, so every server is asked again (a survivor's answer
// depends on its peers), and stays put while none does, so idle clusters
// are not probed more often.
func TestEnsembleRevision(t *testing.T) {
	pods := func(versions ...string) map[int]*corev1.Pod {
		out := map[int]*corev1.Pod{}
		for i, v := range versions {
			out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: v}}
		}
		return out
	}
	base := ensembleRevision(pods("10", "11", "12"))
	if got := ensembleRevision(pods("10", "11", "12")); got != base {
		t.Errorf("unchanged pods: %q, then %q", base, got)
	}
	for name, changed := range map[string]map[int]*corev1.Pod{
		"another pod changed": pods("10", "11", "13"),
		"a pod is gone":       pods("10", "11"),
		"a pod was added":     pods("10", "11", "12", "14"),
		"versions swapped":    pods("11", "10", "12"),
	} {
		if got := ensembleRevision(changed); got == base {
			t.Errorf("%s: revision still %q", name, got)
		}
	}
}

// fakeAdminServers is an http.RoundTripper answering the AdminServer's stat
// and voting_view commands for the servers of a test ensemble, by address,
// without sockets. A held server answers only once released, as a busy
// server's AdminServer, or one not asked again yet, would.
type fakeAdminServers struct {
	mu     sync.Mutex
	role   map[string]zkclient.Role
	voting map[string][]int
	held   map[string]chan struct{}
}

func (f *fakeAdminServers) set(addr string, role zkclient.Role, voting []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.role[addr], f.voting[addr] = role, voting
}

func (f *fakeAdminServers) hold(addr string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.held[addr] = ch
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.held, addr)
		f.mu.Unlock()
		close(ch)
	}
}

func (f *fakeAdminServers) RoundTrip(req *http.Request) (*http.Response, error) {
	addr := req.URL.Host
	f.mu.Lock()
	held := f.held[addr]
	f.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	f.mu.Lock()
	role, voting := f.role[addr], f.voting[addr]
	f.mu.Unlock()
	var answer any
	switch req.URL.Path {
	case "/commands/stat":
		answer = map[string]any{"command": "stats", "version": "3.8.0", "read_only": false,
			"server_stats": map[string]any{"server_state": role, "last_processed_zxid": 0x100000001}}
	case "/commands/voting_view":
		config := map[string]any{}
		for _, id := range voting {
			config[strconv.Itoa(id)] = map[string]string{"learner_type": "participant"}
		}
		answer = map[string]any{"command": "voting_view", "current_config": config}
	default:
		return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Request: req}, nil
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// TestLeaderStaysNamedWhenAScaleOutCommits is issue 27's scale-out: server
// 4 has joined servers 1-3 (3 leads) and the scale step commits it. The
// leader's next answer is not in yet (its AdminServer is slow, or it was
// simply not asked again yet), and every pod is Ready. status.leader must
// still name the server that led before and leads after: a member added
// moves no leadership. It was empty until every server answered again,
// because the commit discarded every answer heard.
func TestLeaderStaysNamedWhenAScaleOutCommits(t *testing.T) {
	zk := testCluster(4)
	zk.Status.Members = []int32{1, 2, 3}
	c := New(Options{ProbeTimeout: 10 * time.Second, ProbeDeadline: 200 * time.Millisecond, ProbeInterval: time.Hour})
	t.Cleanup(c.stats.Close)
	admin := &fakeAdminServers{role: map[string]zkclient.Role{}, voting: map[string][]int{}, held: map[string]chan struct{}{}}
	c.http = &http.Client{Transport: admin}
	address := func(id int) string { return fmt.Sprintf("10.0.0.%d:%d", id, zk.Spec.AdminPort) }
	servers := append(healthy(3, 3, newRev), fakeServer{id: 4, role: zkclient.RoleFollower, rev: newRev, ip: "10.0.0.4", ready: true})
	pods := map[int]*corev1.Pod{}
	for _, s := range servers {
		pods[build.Ordinal(s.id)] = fakePod(zk, s)
		admin.set(address(s.id), s.role, s.voting)
	}
	admin.set(address(4), zkclient.RoleFollower, []int{1, 2, 3, 4})
	observe := func(wait bool) *ensemble {
		e := &ensemble{servers: map[int]*server{}, highestPodOrdinal: -1}
		c.observeServers(t.Context(), zk, e, pods, wait)
		return e
	}
	leaderOf := func(e *ensemble) string {
		if e.leader == nil {
			return ""
		}
		return e.leader.pod.Name
	}

	// The pass of the scale step: it observes, then adds server 4.
	e := observe(true)
	if leaderOf(e) != "zk-2" || !slices.Equal(e.members, []int{1, 2, 3}) {
		t.Fatalf("before the change: leader %q, members %v; want zk-2, [1 2 3]", leaderOf(e), e.members)
	}
	release := admin.hold(address(3))
	admin.set(address(3), zkclient.RoleLeader, []int{1, 2, 3, 4})
	c.membersCommitted(zk, e, []int{1, 2, 3, 4})
	zk.Status.Members = []int32{1, 2, 3, 4}

	// The next passes, of the flow (waiting for answers up to the
	// deadline) and in between (not waiting), while the leader's answer
	// is not in.
	for _, wait := range []bool{true, false} {
		e := observe(wait)
		if leaderOf(e) != "zk-2" || !slices.Equal(e.members, []int{1, 2, 3, 4}) {
			t.Errorf("after the change (waiting for answers: %t): leader %q, members %v; want zk-2, [1 2 3 4]", wait, leaderOf(e), e.members)
		}
		zk.Status.Leader = ""
		c.fillStatus(zk, e)
		if zk.Status.Leader != "zk-2" {
			t.Errorf("status.leader %q, want zk-2", zk.Status.Leader)
		}
	}

	// The leader answers: its own voting view is the membership again.
	release()
	committed := c.lastCommit(zk).at
	deadline := time.Now().Add(10 * time.Second)
	for e = observe(false); e.leader == nil || !e.leader.result.ValueAt.After(committed); e = observe(false) {
		if time.Now().After(deadline) {
			t.Fatalf("the leader was not asked again after the change: %+v", e.servers[2].result)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if leaderOf(e) != "zk-2" || !slices.Equal(e.members, []int{1, 2, 3, 4}) {
		t.Errorf("once the leader answered: leader %q, members %v; want zk-2, [1 2 3 4]", leaderOf(e), e.members)
	}
}

// TestReadAnswers checks how the leader and the membership are read from
// the servers' answers around a committed membership change.
func TestReadAnswers(t *testing.T) {
	committedAt := time.Now()
	before, after := committedAt.Add(-time.Second), committedAt.Add(time.Second)
	answer := func(role zkclient.Role, voting []int, at time.Time) probe.Result[zkclient.Observation] {
		return probe.Result[zkclient.Observation]{Value: zkclient.Observation{Stat: zkclient.ServerStat{Role: role}, Voting: voting},
			At: at, ValueAt: at}
	}
	follower := func(at time.Time) probe.Result[zkclient.Observation] { return answer(zkclient.RoleFollower, nil, at) }
	for _, tc := range []struct {
		name        string
		answers     map[int]probe.Result[zkclient.Observation] // by server id
		last        memberCommit
		wantLeader  string
		wantMembers []int
	}{
		{name: "no change committed: the leader's view",
			answers:    map[int]probe.Result[zkclient.Observation]{1: follower(before), 2: answer(zkclient.RoleLeader, []int{1, 2}, before)},
			wantLeader: "zk-1", wantMembers: []int{1, 2}},
		{name: "a member added, the leader's answer from before: it leads, the committed members",
			answers: map[int]probe.Result[zkclient.Observation]{1: follower(before), 2: answer(zkclient.RoleLeader, []int{1, 2}, before),
				3: {Err: probe.ErrPending}},
			last:       memberCommit{at: committedAt, members: []int{1, 2, 3}},
			wantLeader: "zk-1", wantMembers: []int{1, 2, 3}},
		{name: "the leader answered since: its view",
			answers:    map[int]probe.Result[zkclient.Observation]{1: follower(after), 2: answer(zkclient.RoleLeader, []int{1, 2, 3}, after)},
			last:       memberCommit{at: committedAt, members: []int{1, 2, 3}},
			wantLeader: "zk-1", wantMembers: []int{1, 2, 3}},
		{name: "the leader removed, its answer from before: no leader, status's members",
			answers:     map[int]probe.Result[zkclient.Observation]{1: follower(before), 2: follower(before), 3: answer(zkclient.RoleLeader, []int{1, 2, 3}, before)},
			last:        memberCommit{at: committedAt, members: []int{1, 2}},
			wantMembers: []int{1, 2}},
		{name: "two answer as leader: the later answer",
			answers: map[int]probe.Result[zkclient.Observation]{1: answer(zkclient.RoleLeader, []int{1, 2, 3}, before),
				3: answer(zkclient.RoleLeader, []int{1, 2, 3}, after)},
			wantLeader: "zk-2", wantMembers: []int{1, 2, 3}},
		{name: "the leader's probe failed: no leader, status's members",
			answers:     map[int]probe.Result[zkclient.Observation]{1: follower(after), 2: {Err: errors.New("timeout"), At: after}},
			wantMembers: []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := testCluster(3)
			e := &ensemble{servers: map[int]*server{}}
			results := map[string]probe.Result[zkclient.Observation]{}
			for id, r := range tc.answers {
				pod := fakePod(zk, fakeServer{id: id, ip: fmt.Sprintf("10.0.0.%d", id)})
				e.servers[build.Ordinal(id)] = &server{ordinal: build.Ordinal(id), pod: pod}
				results[string(pod.UID)] = r
			}
			e.readAnswers(results, []int{1, 2}, tc.last)
			leader := ""
			if e.leader != nil {
				leader = e.leader.pod.Name
			}
			if leader != tc.wantLeader || !slices.Equal(e.members, tc.wantMembers) {
				t.Errorf("leader %q, members %v; want %q, %v", leader, e.members, tc.wantLeader, tc.wantMembers)
			}
		})
	}
}

// TestMembersCommittedForgetsAnswersOnlyWhenTheLeaderLeft: a change that
// keeps the leader keeps every answer heard; one that removes the leader
// starts an election, and every answer from before is forgotten.
func TestMembersCommittedForgetsAnswersOnlyWhenTheLeaderLeft(t *testing.T) {
	zk := testCluster(3)
	c := New(Options{ProbeInterval: time.Hour})
	t.Cleanup(c.stats.Close)
	c.http = &http.Client{Transport: &fakeAdminServers{role: map[string]zkclient.Role{}, voting: map[string][]int{}, held: map[string]chan struct{}{}}}
	e := fakeEnsemble(zk, nil, healthy(3, 3, newRev)...)
	var targets []probe.Target
	for _, s := range e.servers {
		targets = append(targets, probe.Target{Group: framework.Group(zk), Key: string(s.pod.UID), Address: s.pod.Status.PodIP + ":8080"})
	}
	c.stats.Watch(targets, observeCall(c.http))
	c.membersCommitted(zk, e, []int{1, 2, 3, 4})
	if n := c.stats.Len(); n != 3 {
		t.Errorf("%d answers kept after a member was added, want 3", n)
	}
	c.membersCommitted(zk, e, []int{1, 2})
	if n := c.stats.Len(); n != 0 {
		t.Errorf("%d answers kept after the leader was removed, want none", n)
	}
}

// TestNewLeaderShowsTheServingEnsembleSeed20261203 is what chaos seed
// 20261203 found at its first step: the operator's leader killed, the new
// leader's first pass (no flow running, so it waits for no answer) read
// every server as not having answered yet and wrote "0 of 3 members serve,
// no leader answers" over a serving ensemble, then the truth a second
// later. A fresh controller's first observation must carry the servers'
// answers.
func TestNewLeaderShowsTheServingEnsembleSeed20261203(t *testing.T) {
	zk := testCluster(3)
	zk.Status.Members = []int32{1, 2, 3}
	c := New(Options{ProbeTimeout: 2 * time.Second, ProbeDeadline: time.Second, ProbeInterval: time.Hour})
	t.Cleanup(c.stats.Close)
	admin := &fakeAdminServers{role: map[string]zkclient.Role{}, voting: map[string][]int{}, held: map[string]chan struct{}{}}
	c.http = &http.Client{Transport: admin}
	pods := map[int]*corev1.Pod{}
	for _, s := range healthy(3, 3, newRev) {
		pods[build.Ordinal(s.id)] = fakePod(zk, s)
		// Every member of a serving ensemble answers its voting view.
		admin.set(fmt.Sprintf("%s:%d", s.ip, zk.Spec.AdminPort), s.role, []int{1, 2, 3})
	}
	e := &ensemble{servers: map[int]*server{}, highestPodOrdinal: -1}
	c.observeServers(t.Context(), zk, e, pods, false)
	if n := e.servingMembers([]int{1, 2, 3}); n != 3 || e.leader == nil || e.leader.pod.Name != "zk-2" {
		t.Errorf("the first pass of a new leader sees %d of 3 members serve, leader %v; want 3, zk-2", n, e.leader)
	}
}
