package zookeeper

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gozk "github.com/go-zookeeper/zk"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// The plan tests drive the controller's pure decisions (which member joins
// or leaves next, which server restarts next, why the cluster is not Ready)
// with ensembles made up in memory: no API server, no ZooKeeper.

const (
	// oldRev and newRev are the StatefulSet's previous and latest pod
	// template revisions (controller-revision-hash).
	oldRev = "zk-old"
	newRev = "zk-new"
)

// fakeServer describes one server of a test ensemble.
type fakeServer struct {
	id      int
	role    zkclient.Role // leader, follower; empty: does not serve
	rev     string        // the pod's controller-revision-hash
	ip      string        // the pod's IP, "" for none
	voting  []int         // the voting view, the leader's is the membership
	ready   bool          // the pod's Ready condition
	image   string        // the container's image
	noReply bool          // the probe has no answer at all yet (ErrPending)
	stuck   bool          // the pod has been unready for five minutes
	exited  int32         // the exit code of the container's crash loop, 0 for none
	running bool          // with exited: the container runs again, between two crashes
}

// testCluster returns a defaulted ZookeeperCluster zk/ns with replicas.
func testCluster(replicas int32) *Cluster {
	zk := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "zk", Namespace: "ns", UID: "uid-zk"}}
	zk.Spec.Replicas = replicas
	zkv1.Default(zk)
	return zk
}

// fakePod returns the pod of s in cluster zk.
func fakePod(zk *Cluster, s fakeServer) *corev1.Pod {
	ordinal := build.Ordinal(s.id)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      build.PodName(zk, ordinal),
			Namespace: zk.Namespace,
			UID:       types.UID(fmt.Sprint("uid-", ordinal)),
			Labels:    build.Labels(zk, build.ComponentServer),
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: build.ContainerName, Image: s.image}}},
		Status: corev1.PodStatus{PodIP: s.ip},
	}
	if s.rev != "" {
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] = s.rev
	}
	status := corev1.ConditionFalse
	if s.ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if s.stuck {
		pod.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-5 * time.Minute))
	}
	if s.exited != 0 {
		state := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}
		if s.running {
			state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: build.ContainerName, RestartCount: 4, State: state,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: s.exited}}}}
	}
	return pod
}

// fakeResult is the probe result of s: a stat and voting view when it
// serves, an error when it does not.
func fakeResult(s fakeServer) probe.Result[zkclient.Observation] {
	now := time.Now()
	switch {
	case s.noReply:
		return probe.Result[zkclient.Observation]{Err: probe.ErrPending}
	case s.role == "":
		return probe.Result[zkclient.Observation]{Err: zkclient.ErrNotServing, At: now}
	}
	return probe.Result[zkclient.Observation]{
		Value:   zkclient.Observation{Stat: zkclient.ServerStat{Role: s.role, LastZxid: zkclient.Zxid(0x100000000 + int64(s.id))}, Voting: s.voting},
		At:      now,
		ValueAt: now,
	}
}

// fakeEnsemble builds what observe would have found: a StatefulSet whose
// latest revision is newRev (nil sts when noSTS), the servers, and the
// membership (the leader's voting view, else members).
func fakeEnsemble(zk *Cluster, members []int, servers ...fakeServer) *ensemble {
	replicas := zk.Spec.Replicas
	e := &ensemble{
		sts: &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: zk.Name, Namespace: zk.Namespace, Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: &replicas},
			Status:     appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: newRev, CurrentRevision: oldRev},
		},
		servers: map[int]*server{},
		members: slices.Clone(members),
	}
	for _, fs := range servers {
		s := &server{ordinal: build.Ordinal(fs.id), pod: fakePod(zk, fs), result: fakeResult(fs)}
		e.servers[s.ordinal] = s
		if s.serving() && fs.role == zkclient.RoleLeader {
			e.leader = s
			e.members = slices.Clone(fs.voting)
		}
	}
	return e
}

// healthy returns n serving servers 1..n on revision rev, server lead the
// leader, voting 1..n.
func healthy(n, lead int, rev string) []fakeServer {
	out := make([]fakeServer, 0, n)
	for id := 1; id <= n; id++ {
		s := fakeServer{id: id, role: zkclient.RoleFollower, rev: rev, ip: fmt.Sprintf("10.0.0.%d", id), ready: true, image: "zk:1"}
		if id == lead {
			s.role = zkclient.RoleLeader
			s.voting = build.IDs(int32(n))
		}
		out = append(out, s)
	}
	return out
}

// with returns servers with the server of id changed by mutate.
func with(servers []fakeServer, id int, mutate func(*fakeServer)) []fakeServer {
	out := slices.Clone(servers)
	for i := range out {
		if out[i].id == id {
			mutate(&out[i])
		}
	}
	return out
}

func notServing(s *fakeServer) { s.role, s.ready = "", false }
func stale(s *fakeServer)      { s.rev = oldRev }
func current(s *fakeServer)    { s.rev = newRev }

// allStale marks every server stale.
func allStale(servers []fakeServer) []fakeServer {
	out := slices.Clone(servers)
	for i := range out {
		stale(&out[i])
	}
	return out
}

func TestNextMemberChange(t *testing.T) {
	for _, tc := range []struct {
		members     []int
		want        int
		add, remove int
		why         string
	}{
		{members: []int{1, 2, 3}, want: 3, why: "in sync"},
		{members: []int{1}, want: 1, why: "in sync, one server"},
		{members: []int{1, 2, 3}, want: 5, add: 4, why: "scale-out: the lowest missing id joins"},
		{members: []int{1, 2, 3, 4}, want: 5, add: 5, why: "scale-out, last step"},
		{members: []int{1}, want: 3, add: 2, why: "1 to 3"},
		{members: []int{1, 3}, want: 3, add: 2, why: "a gap is filled first"},
		{members: []int{2, 3}, want: 3, add: 1, why: "server 1 missing"},
		{members: nil, want: 3, add: 1, why: "no members at all: 1 joins"},
		{members: []int{1, 2, 3, 4, 5}, want: 3, remove: 5, why: "scale-in: the highest id leaves"},
		{members: []int{1, 2, 3}, want: 1, remove: 3, why: "3 to 1"},
		{members: []int{1, 2}, want: 1, remove: 2, why: "2 to 1"},
		{members: []int{1, 2, 4}, want: 3, remove: 4, why: "as many members as wanted, one beyond want: it leaves before 3 joins"},
		{members: []int{1, 2, 3, 5}, want: 3, remove: 5, why: "more than wanted: the one beyond want leaves"},
		{members: []int{1, 5}, want: 3, add: 2, why: "fewer than wanted: a missing id joins before the extra leaves"},
		{members: []int{1, 2, 5, 6}, want: 3, remove: 6, why: "as many extras as missing, more than want: the highest extra leaves"},
		{members: []int{0, 1, 2}, want: 3, remove: 0, why: "an id below 1 is beyond the range too"},
		{members: []int{2}, want: 1, add: 1, why: "the only member is beyond want: 1 joins before it leaves, never an empty ensemble"},
	} {
		t.Run(fmt.Sprintf("%v_to_%d", tc.members, tc.want), func(t *testing.T) {
			add, remove := nextMemberChange(slices.Clone(tc.members), tc.want)
			if add != tc.add || remove != tc.remove {
				t.Errorf("nextMemberChange(%v, %d) = add %d remove %d, want add %d remove %d (%s)",
					tc.members, tc.want, add, remove, tc.add, tc.remove, tc.why)
			}
			if add != 0 && remove != 0 {
				t.Errorf("nextMemberChange(%v, %d) changes two members at once", tc.members, tc.want)
			}
		})
	}
}

// TestNextMemberChangeConverges applies the changes one at a time from
// every membership drawn from ids 1..7 and checks that it reaches 1..want,
// one member per step, within |missing|+|extra| steps, and never removes
// the last member (ZooKeeper keeps at least one voter, and the quorum guard
// of changeMembers waits forever for a quorum of an empty ensemble).
func TestNextMemberChangeConverges(t *testing.T) {
	var problems []string
	for want := 1; want <= 5; want++ {
		for mask := 1; mask < 1<<7; mask++ {
			var members []int
			for id := 1; id <= 7; id++ {
				if mask&(1<<(id-1)) != 0 {
					members = append(members, id)
				}
			}
			if problem := replayMemberChanges(members, want); problem != "" {
				problems = append(problems, fmt.Sprintf("from %v to %d: %s", members, want, problem))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d starting memberships do not converge safely, e.g.:\n%s",
			len(problems), strings.Join(problems[:min(len(problems), 8)], "\n"))
	}
}

// replayMemberChanges applies nextMemberChange to members until it reports
// nothing to do, and says what went wrong, "" when it reached 1..want.
func replayMemberChanges(members []int, want int) string {
	members = slices.Clone(members)
	target := build.IDs(int32(want))
	limit := 0
	for _, id := range target {
		if !slices.Contains(members, id) {
			limit++
		}
	}
	for _, id := range members {
		if id > want {
			limit++
		}
	}
	for steps := 0; ; steps++ {
		add, remove := nextMemberChange(members, want)
		switch {
		case add == 0 && remove == 0:
			if !slices.Equal(members, target) {
				return fmt.Sprintf("stopped at %v", members)
			}
			return ""
		case steps == limit:
			return fmt.Sprintf("more than %d changes (at %v)", limit, members)
		case add != 0 && remove != 0:
			return fmt.Sprintf("adds %d and removes %d at once from %v", add, remove, members)
		case add != 0:
			if slices.Contains(members, add) || add < 1 || add > want {
				return fmt.Sprintf("adds %d to %v", add, members)
			}
			members = append(members, add)
			slices.Sort(members)
		default:
			if !slices.Contains(members, remove) {
				return fmt.Sprintf("removes %d, not in %v", remove, members)
			}
			if len(members) == 1 {
				return fmt.Sprintf("removes %d, the last member", remove)
			}
			members = slices.DeleteFunc(members, func(id int) bool { return id == remove })
		}
	}
}

func TestNextRestart(t *testing.T) {
	zk := testCluster(3)
	three := healthy(3, 1, newRev) // server 1 leads
	for _, tc := range []struct {
		name      string
		members   []int // status.members, used when no leader answers
		servers   []fakeServer
		leaderToo bool
		victim    int    // server id, 0 for none
		wait      string // a substring of the wait message; "" for none
	}{
		{
			name:    "nothing stale: done",
			servers: three,
		},
		{
			name:      "nothing stale: the leader step is done too",
			servers:   three,
			leaderToo: true,
		},
		{
			name:    "followers before the leader, in ordinal order",
			servers: allStale(three),
			victim:  2,
		},
		{
			name:      "followers before the leader in the leader step too",
			servers:   with(allStale(three), 2, current),
			leaderToo: true,
			victim:    3,
		},
		{
			name:    "a stale leader alone is left for the leader step",
			servers: with(three, 1, stale),
		},
		{
			name:      "the stale leader goes in the leader step",
			servers:   with(three, 1, stale),
			leaderToo: true,
			victim:    1,
		},
		{
			name:      "the leader of a one-server ensemble",
			servers:   with(healthy(1, 1, newRev), 1, stale),
			leaderToo: true,
			victim:    1,
		},
		{
			name:    "a stale server that does not serve goes first, before the followers",
			servers: with(allStale(three), 3, notServing),
			victim:  3,
		},
		{
			name:    "two stale members that do not serve, no leader: wait (a probe timeout is no reason to take two down)",
			members: []int{1, 2, 3},
			servers: with(with(allStale(three), 1, notServing), 3, notServing),
			wait:    "1 of 3 do",
		},
		{
			name:    "a stale server whose probe has not answered yet counts as not serving",
			servers: with(allStale(three), 2, func(s *fakeServer) { s.noReply = true; s.role = "" }),
			victim:  2,
		},
		{
			name:    "wait while a member (up to date) does not serve",
			servers: with(allStale(three), 3, func(s *fakeServer) { current(s); notServing(s) }),
			wait:    "2 of 3 do",
		},
		{
			name:      "wait while a member does not serve, before the leader too",
			servers:   with(with(three, 1, stale), 2, notServing),
			leaderToo: true,
			wait:      "2 of 3 do",
		},
		{
			name:    "wait while a member's pod is missing (the one just restarted)",
			servers: with(three[:2], 2, stale),
			wait:    "2 of 3 do",
		},
		{
			name:    "wait without a leader",
			members: []int{1, 2, 3},
			servers: with(with(allStale(three), 1, func(s *fakeServer) { s.role = zkclient.RoleFollower }), 2, current),
			wait:    "leader known: false",
		},
		{
			name: "a stale member that does not serve waits while another member is down (just restarted)",
			servers: with(with(allStale(healthy(3, 3, newRev)), 1, func(s *fakeServer) { current(s); notServing(s) }),
				2, func(s *fakeServer) { s.noReply = true; s.role = "" }),
			wait: "1 of 3 do",
		},
		{
			name:    "stale members that do not serve during an election wait",
			members: []int{1, 2, 3},
			servers: with(with(with(allStale(three), 1, notServing), 2, notServing), 3, notServing),
			wait:    "0 of 3 do",
		},
		{
			name:    "a stale member unready for minutes goes anyway",
			members: []int{1, 2, 3},
			servers: with(with(allStale(three), 1, notServing), 3, func(s *fakeServer) { notServing(s); s.stuck = true }),
			victim:  3,
		},
		{
			name:    "nothing stale but a member does not serve: wait for it to rejoin",
			servers: with(three, 3, notServing),
			wait:    "2 of 3 do",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := fakeEnsemble(zk, tc.members, tc.servers...)
			victim, wait := nextRestart(e, tc.leaderToo, time.Now())
			got := 0
			if victim != nil {
				got = victim.id()
			}
			if got != tc.victim {
				t.Errorf("victim = server %d, want %d (wait %q)", got, tc.victim, wait)
			}
			switch {
			case tc.wait == "" && wait != "":
				t.Errorf("wait = %q, want none", wait)
			case tc.wait != "" && !strings.Contains(wait, tc.wait):
				t.Errorf("wait = %q, want one containing %q", wait, tc.wait)
			}
			if victim != nil && wait != "" {
				t.Errorf("both a victim (%d) and a wait (%q)", victim.id(), wait)
			}
		})
	}
}

// TestRestartOrderFollowsTheDesign replays a whole rollout of five servers
// on nextRestart, restarting the victim it picks (the pod comes back on the
// new revision and serves), and checks the order: the servers that do not
// serve, then the followers in ordinal order, then the leader, each after
// every member serves again.
func TestRestartOrderFollowsTheDesign(t *testing.T) {
	zk := testCluster(5)
	servers := with(allStale(healthy(5, 2, newRev)), 4, notServing)
	var order []int
	for _, leaderToo := range []bool{false, true} {
		for range 10 {
			e := fakeEnsemble(zk, nil, servers...)
			victim, wait := nextRestart(e, leaderToo, time.Now())
			if wait != "" {
				t.Fatalf("unexpected wait %q after restarting %v", wait, order)
			}
			if victim == nil {
				break
			}
			id := victim.id()
			order = append(order, id)
			// The pod comes back on the new revision. A restarted leader
			// would hand over to another server; the order is complete by
			// then.
			servers = with(servers, id, func(s *fakeServer) {
				current(s)
				if s.role == "" {
					s.role, s.ready = zkclient.RoleFollower, true
				}
			})
		}
	}
	if want := []int{4, 1, 3, 5, 2}; !slices.Equal(order, want) {
		t.Errorf("restart order = %v, want %v", order, want)
	}
}

func TestProgress(t *testing.T) {
	// A cluster that has been Ready: reasons say what is happening now.
	zk := testCluster(3)
	framework.SetCondition(&zk.Status.Conditions, framework.ConditionReady, metav1.ConditionTrue, framework.ReasonReconciled, "", 1)
	// One never Ready yet: Creating, whatever it waits for.
	fresh := testCluster(3)
	three := healthy(3, 1, newRev)
	for _, tc := range []struct {
		name    string
		noSTS   bool
		new     bool // a cluster never Ready yet
		members []int
		servers []fakeServer
		mutate  func(*ensemble)
		reason  string
		message string // a substring
	}{
		{name: "no StatefulSet yet", noSTS: true, reason: commonv1.ReasonCreating},
		{name: "new: no pods yet", new: true, members: []int{1, 2, 3}, reason: commonv1.ReasonCreating, message: "0 of 3 server pods exist"},
		{name: "new: no leader yet", new: true, members: []int{1, 2, 3},
			servers: with(three, 1, func(s *fakeServer) { s.role = zkclient.RoleFollower }), reason: commonv1.ReasonCreating, message: "no server answers as leader"},
		{name: "new: ready", new: true, servers: three},
		{name: "in sync", servers: three},
		{
			name:    "membership differs from spec",
			servers: with(three, 1, func(s *fakeServer) { s.voting = []int{1, 2} }),
			reason:  commonv1.ReasonScaling, message: "members [1 2], want 3",
		},
		{
			name:    "membership of the right size but other ids",
			servers: with(three, 1, func(s *fakeServer) { s.voting = []int{1, 2, 4} }),
			reason:  commonv1.ReasonScaling, message: "members [1 2 4]",
		},
		{
			name:    "a member's pod is missing, no scaling",
			servers: three[:2],
			reason:  zkv1.ReasonServersNotServing, message: "2 of 3 server pods exist",
		},
		{
			name:    "every pod went, no scaling",
			members: []int{1, 2, 3},
			reason:  zkv1.ReasonServersNotServing, message: "0 of 3 server pods exist",
		},
		{
			name:    "pods follow a StatefulSet being resized",
			servers: three[:2],
			mutate:  func(e *ensemble) { e.sts.Spec.Replicas = ptr.To[int32](2) },
			reason:  commonv1.ReasonScaling, message: "2 server pods, want 3",
		},
		{
			name:    "a server on an older revision",
			servers: with(three, 2, stale),
			reason:  commonv1.ReasonRestarting, message: "1 server runs an older revision",
		},
		{
			// Not Ready at the new generation before the rollout is known.
			name:    "a template the StatefulSet controller has not seen yet is Restarting",
			servers: three,
			mutate:  func(e *ensemble) { e.sts.Generation++ },
			reason:  commonv1.ReasonRestarting,
		},
		{
			name:    "no update revision yet",
			servers: three,
			mutate:  func(e *ensemble) { e.sts.Status.UpdateRevision = "" },
			reason:  commonv1.ReasonRestarting,
		},
		{
			name:    "no leader",
			members: []int{1, 2, 3},
			servers: with(three, 1, func(s *fakeServer) { s.role = zkclient.RoleFollower }),
			reason:  commonv1.ReasonNoLeader,
		},
		{
			name:    "a member does not serve",
			servers: with(three, 3, notServing),
			reason:  zkv1.ReasonServersNotServing, message: "server 3 does not serve yet",
		},
		{
			// A full volume, a log the server cannot read: the message
			// says how it ends, not how often (it would change each time).
			name:    "a member crash-loops",
			servers: with(three, 3, func(s *fakeServer) { notServing(s); s.exited = 3 }),
			reason:  zkv1.ReasonServersNotServing, message: "server 3 does not serve: container " + build.ContainerName + " last exited with code 3",
		},
		{
			// Between two crashes its container runs, not ready: the
			// message stays.
			name:    "a member crash-loops, running again for now",
			servers: with(three, 3, func(s *fakeServer) { notServing(s); s.exited = 3; s.running = true }),
			reason:  zkv1.ReasonServersNotServing, message: "server 3 does not serve: container " + build.ContainerName + " last exited with code 3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := zk
			if tc.new {
				cluster = fresh
			}
			e := fakeEnsemble(cluster, tc.members, tc.servers...)
			if tc.noSTS {
				e.sts = nil
			}
			if tc.mutate != nil {
				tc.mutate(e)
			}
			reason, message := progress(cluster, e)
			if reason != tc.reason || !strings.Contains(message, tc.message) {
				t.Errorf("progress = %q %q, want %q with %q", reason, message, tc.reason, tc.message)
			}
			if (reason == "") != (message == "") {
				t.Errorf("progress = %q %q: a reason without a message or the reverse", reason, message)
			}
		})
	}
}

func TestNeedsScale(t *testing.T) {
	for _, tc := range []struct {
		want, stsReplicas int32
		members           []int
		scale             bool
	}{
		{3, 3, []int{1, 2, 3}, false},
		{1, 1, []int{1}, false},
		{5, 5, []int{1, 2, 3, 4, 5}, false},
		{5, 3, []int{1, 2, 3}, true},       // scale-out
		{3, 5, []int{1, 2, 3, 4, 5}, true}, // scale-in
		{3, 4, []int{1, 2, 3}, true},       // a joining server's pod left over
		{3, 3, []int{1, 2}, true},          // a member missing
		{3, 3, []int{1, 2, 4}, true},       // the wrong member
		{3, 3, []int{1, 2, 3, 4}, true},    // one member too many
		{3, 3, nil, true},                  // no membership known
	} {
		if got := needsScale(tc.want, tc.stsReplicas, tc.members); got != tc.scale {
			t.Errorf("needsScale(%d, %d, %v) = %t, want %t", tc.want, tc.stsReplicas, tc.members, got, tc.scale)
		}
	}
}

func TestOrdinals(t *testing.T) {
	zk := testCluster(3)
	for _, tc := range []struct {
		pod     string
		ordinal int
		ok      bool
	}{
		{"zk-0", 0, true},
		{"zk-7", 7, true},
		{"zk-a-0", 0, false},
		{"data-zk-0", 0, false},
		{"zookeeper-0", 0, false},
	} {
		ordinal, ok := serverSet(zk).PodOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod}})
		if ok != tc.ok || (ok && ordinal != tc.ordinal) {
			t.Errorf("podOrdinal(%q) = %d %t, want %d %t", tc.pod, ordinal, ok, tc.ordinal, tc.ok)
		}
	}
	for _, tc := range []struct {
		claim   string
		ordinal int
		ok      bool
	}{
		{"data-zk-0", 0, true},
		{"data-zk-5", 5, true},
		{"zk-0", 0, false},
		{"data-zk-a-0", 0, false}, // a claim of cluster zk-a
		{"datalog-zk-0", 0, false},
		{"data-zk-", 0, false},
	} {
		ordinal, ok := serverSet(zk).ClaimOrdinal(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: tc.claim}})
		if ok != tc.ok || (ok && ordinal != tc.ordinal) {
			t.Errorf("claimOrdinal(%q) = %d %t, want %d %t", tc.claim, ordinal, ok, tc.ordinal, tc.ok)
		}
	}
	// The names the builders give round-trip.
	for ordinal := range 15 {
		if o, ok := serverSet(zk).PodOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: build.PodName(zk, ordinal)}}); !ok || o != ordinal {
			t.Errorf("podOrdinal(PodName(%d)) = %d %t", ordinal, o, ok)
		}
		claim := fmt.Sprintf("%s-%s", build.DataVolume, build.PodName(zk, ordinal))
		if o, ok := serverSet(zk).ClaimOrdinal(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}}); !ok || o != ordinal {
			t.Errorf("claimOrdinal(%s) = %d %t", claim, o, ok)
		}
	}
}

func TestQuorum(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4, 15: 8} {
		if got := quorum(n); got != want {
			t.Errorf("quorum(%d) = %d, want %d", n, got, want)
		}
		// A majority: more than half, and losing n - quorum members keeps it.
		if q := quorum(n); 2*q <= n || 2*(q-1) > n {
			t.Errorf("quorum(%d) = %d is not the smallest majority", n, q)
		}
	}
}

func TestHasQuorum(t *testing.T) {
	zk := testCluster(3)
	three := healthy(3, 1, newRev)
	for _, tc := range []struct {
		name    string
		members []int
		servers []fakeServer
		want    bool
	}{
		{"all serve", nil, three, true},
		{"one of three down", nil, with(three, 3, notServing), true},
		{"two of three down", nil, with(with(three, 3, notServing), 2, notServing), false},
		{"a member's pod missing", nil, three[:2], true},
		{"no leader", []int{1, 2, 3}, with(three, 1, func(s *fakeServer) { s.role = zkclient.RoleFollower }), false},
		{"no servers", []int{1, 2, 3}, nil, false},
		// Servers 2 and 3 serve but are not members; 4 and 5 have no pods.
		{"serving non-members do not count", nil, with(three, 1, func(s *fakeServer) { s.voting = []int{1, 4, 5} }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := fakeEnsemble(zk, tc.members, tc.servers...)
			if got := e.hasQuorum(); got != tc.want {
				t.Errorf("hasQuorum = %t, want %t (members %v)", got, tc.want, e.members)
			}
		})
	}
}

func TestStaleAndRevisionKnown(t *testing.T) {
	zk := testCluster(3)
	e := fakeEnsemble(zk, nil, with(with(healthy(3, 1, newRev), 3, stale), 1, func(s *fakeServer) { s.rev = "" })...)
	var ids []int
	for _, s := range e.stale() {
		ids = append(ids, s.id())
	}
	// A pod without the label has not been made from the latest revision
	// either.
	if want := []int{1, 3}; !slices.Equal(ids, want) {
		t.Errorf("stale = %v, want %v", ids, want)
	}
	if !e.revisionKnown() {
		t.Error("revisionKnown = false with observedGeneration = generation and an update revision")
	}
	e.sts.Generation = 3
	if e.revisionKnown() {
		t.Error("revisionKnown = true before the StatefulSet controller observed the latest generation")
	}
	e.sts = nil
	if e.revisionKnown() {
		t.Error("revisionKnown = true without a StatefulSet")
	}
}

func TestClientAddressesLeaderFirst(t *testing.T) {
	zk := testCluster(3)
	e := fakeEnsemble(zk, nil, with(healthy(3, 2, newRev), 3, notServing)...)
	got := e.clientAddresses()
	want := []string{"10.0.0.2:2181", "10.0.0.1:2181"}
	if !slices.Equal(got, want) {
		t.Errorf("clientAddresses = %v, want %v", got, want)
	}
}

func TestFillStatus(t *testing.T) {
	zk := testCluster(3)
	c := New(Options{})
	servers := with(healthy(3, 2, newRev), 3, func(s *fakeServer) { notServing(s); s.image = "zk:2" })
	e := fakeEnsemble(zk, nil, servers...)
	zk.Status.CurrentImage = "zk:1"
	c.fillStatus(zk, e)
	st := zk.Status
	if st.Leader != "zk-1" {
		t.Errorf("leader = %q, want zk-1", st.Leader)
	}
	if !slices.Equal(st.Members, []int32{1, 2, 3}) {
		t.Errorf("members = %v, want [1 2 3]", st.Members)
	}
	if st.ReadyReplicas != 2 {
		t.Errorf("readyReplicas = %d, want 2", st.ReadyReplicas)
	}
	if want := "zk-client.ns.svc.cluster.local:2181"; st.ClientEndpoint != want {
		t.Errorf("clientEndpoint = %q, want %q", st.ClientEndpoint, want)
	}
	// Two images run: the current one stays until all run the new one.
	if st.CurrentImage != "zk:1" {
		t.Errorf("currentImage = %q, want zk:1 kept during the image change", st.CurrentImage)
	}
	if n := len(st.Servers[zkv1.RoleLeader]); n != 1 {
		t.Errorf("%d leaders in status.servers, want 1: %+v", n, st.Servers)
	}
	if n := len(st.Servers[zkv1.RoleFollower]); n != 1 {
		t.Errorf("%d followers in status.servers, want 1: %+v", n, st.Servers)
	}
	unknown := st.Servers[zkv1.RoleUnknown]
	if len(unknown) != 1 || unknown[0].Name != "zk-2" || unknown[0].ID != 3 ||
		!strings.Contains(unknown[0].Error, zkclient.ErrNotServing.Error()) || unknown[0].LastZxid != "" {
		t.Errorf("unknown servers = %+v, want zk-2 (id 3) with the probe's error", unknown)
	}
	if l := st.Servers[zkv1.RoleLeader]; len(l) == 1 && (l[0].LastZxid != "0x100000002" || l[0].Address != "10.0.0.2") {
		t.Errorf("leader's status = %+v", l[0])
	}
}

// TestFillStatusRefreshesZxidsOncePerResync checks that a busy cluster,
// whose zxids move with every write, gets its zxids in status refreshed at
// most once per resync period, or at once when a server changes role.
func TestFillStatusRefreshesZxidsOncePerResync(t *testing.T) {
	zk := testCluster(3)
	c := New(Options{Resync: time.Hour})
	leaderZxid := func() string { return zk.Status.Servers[zkv1.RoleLeader][0].LastZxid }
	bump := func(e *ensemble, by int64) {
		for _, s := range e.servers {
			v := s.result.Value
			v.Stat.LastZxid += zkclient.Zxid(by)
			s.result.Value = v
		}
	}

	e := fakeEnsemble(zk, nil, healthy(3, 2, newRev)...)
	c.fillStatus(zk, e)
	first := leaderZxid()

	bump(e, 100)
	c.fillStatus(zk, e)
	if got := leaderZxid(); got != first {
		t.Errorf("within the resync period the leader's zxid went from %s to %s, want it kept", first, got)
	}

	// A new leader is recorded with its own zxid at once.
	e = fakeEnsemble(zk, nil, healthy(3, 3, newRev)...)
	bump(e, 200)
	c.fillStatus(zk, e)
	if got, want := leaderZxid(), e.servers[2].result.Value.Stat.LastZxid.String(); got != want {
		t.Errorf("new leader's zxid = %s, want %s", got, want)
	}

	// Past the resync period every zxid is refreshed.
	c.zxidsAt[zk.UID] = time.Now().Add(-2 * time.Hour)
	bump(e, 300)
	c.fillStatus(zk, e)
	if got, want := leaderZxid(), e.servers[2].result.Value.Stat.LastZxid.String(); got != want {
		t.Errorf("after the resync period the leader's zxid = %s, want %s", got, want)
	}
}

func TestReconfigBusy(t *testing.T) {
	for _, tc := range []struct {
		err  error
		busy bool
	}{
		{fmt.Errorf("add server 4: %w", zkclient.ErrNoQuorum), true},
		{fmt.Errorf("add server 4: %w", zkclient.ErrReconfigInProgress), true},
		{fmt.Errorf("remove server 5: %w", zkclient.ErrStaleVersion), true},
		{fmt.Errorf("remove server 5: %w", gozk.ErrNoAuth), false},
		{errors.New("connection refused"), false},
	} {
		if got := reconfigBusy(tc.err); got != tc.busy {
			t.Errorf("reconfigBusy(%v) = %t, want %t", tc.err, got, tc.busy)
		}
	}
}

// TestDesiredServers checks how Declare sizes the StatefulSet: from the
// size an operation holds (status.operation.held) and the membership,
// never from which flow or step runs.
func TestDesiredServers(t *testing.T) {
	holding := func(replicas int32) *commonv1.Operation {
		op := commonv1.NewOperation(flowScale, "t", []string{stepChangeMembers, stepResize}, metav1.Now())
		op.Hold("zk", replicas)
		return op
	}
	ended := func(replicas int32, phase commonv1.Phase) *commonv1.Operation {
		op := holding(replicas)
		op.Finish(phase, metav1.Now())
		return op
	}
	otherSet := commonv1.NewOperation(flowScale, "t", []string{stepChangeMembers, stepResize}, metav1.Now())
	otherSet.Hold("zk-other", 7)
	restart := commonv1.NewOperation(flowRestart, "t", []string{stepRestartFollowers, stepRestartLeader}, metav1.Now())
	for _, tc := range []struct {
		name      string
		want      int32 // spec.replicas
		sts       int32 // the StatefulSet's replicas; 0 when it does not exist
		members   []int
		bootstrap bool
		op        *commonv1.Operation
		replicas  int32
		joining   int
	}{
		{"a new cluster starts with its bootstrap members", 5, 0, []int{1, 2}, true, nil, 2, 0},
		{"a new cluster ignores a hold", 5, 0, []int{1, 2}, true, holding(5), 2, 0},
		{"steady", 3, 3, []int{1, 2, 3}, false, nil, 3, 0},
		{"never fewer pods than members", 3, 2, []int{1, 2, 3}, false, nil, 3, 0},
		{"no hold: nothing added or removed", 5, 3, []int{1, 2, 3}, false, nil, 3, 0},
		{"a held size adds the joining server", 5, 3, []int{1, 2, 3}, false, holding(4), 4, 4},
		{"the joiner's pod kept", 5, 4, []int{1, 2, 3}, false, holding(4), 4, 4},
		{"a hold below the joiner starts none", 5, 3, []int{1, 2, 3}, false, holding(3), 3, 0},
		{"scale-in keeps the pods while members leave", 3, 5, []int{1, 2, 3, 4}, false, holding(5), 5, 0},
		{"no hold: a scale-in shrinks nothing", 3, 5, []int{1, 2, 3}, false, nil, 5, 0},
		{"a held size shrinks the set", 3, 5, []int{1, 2, 3}, false, holding(3), 3, 0},
		{"a hold never drops a member's pod", 3, 5, []int{1, 2, 3, 4}, false, holding(3), 4, 0},
		{"a failed flow keeps its hold and the joiner's line", 5, 4, []int{1, 2, 3}, false, ended(4, commonv1.PhaseFailed), 4, 4},
		{"a failed flow starts no joiner it did not hold", 5, 3, []int{1, 2, 3}, false, ended(3, commonv1.PhaseFailed), 3, 0},
		{"a succeeded flow's hold is over", 5, 3, []int{1, 2, 3}, false, ended(4, commonv1.PhaseSucceeded), 3, 0},
		{"an aborted flow's hold is over", 3, 5, []int{1, 2, 3}, false, ended(3, commonv1.PhaseAborted), 5, 0},
		{"an aborted scale-out leaves the joiner's pod, without its line", 5, 4, []int{1, 2, 3}, false, ended(4, commonv1.PhaseAborted), 4, 0},
		{"another workload's hold", 5, 3, []int{1, 2, 3}, false, otherSet, 3, 0},
		{"a rolling restart changes no size", 5, 3, []int{1, 2, 3}, false, restart, 3, 0},
		{"no members known: no panic (applying refuses them)", 3, 3, nil, false, nil, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := testCluster(tc.want)
			e := &ensemble{members: tc.members, bootstrap: tc.bootstrap}
			if tc.sts > 0 {
				e.sts = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(tc.sts)}}
			}
			replicas, joining := desiredServers(zk, e, tc.op)
			if replicas != tc.replicas || joining != tc.joining {
				t.Errorf("desiredServers = %d, %d; want %d, %d", replicas, joining, tc.replicas, tc.joining)
			}
		})
	}
}
