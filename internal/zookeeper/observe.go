package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// ObserveEnsemble asks again every target whose answer is older than the
// collector's MinInterval, concurrently, through the collector c, which
// bounds each call by its call timeout and the whole by its
// deadline: a hung server never delays the answer beyond the deadline. A
// target's Address is its AdminServer's host:port; each call is
// zkclient.Observe. It returns each target's latest result keyed by
// Target.Key: a server that did not answer in time has a timeout error (its
// call timed out) or probe.ErrPending (its call still runs), one that runs
// without serving has an error matching zkclient.ErrNotServing. Create c
// once per controller with probe.NewCollector[zkclient.Observation] and
// keep it. The controller and the benchmark (bench/zookeeper) both observe
// through it.
func ObserveEnsemble(ctx context.Context, c *probe.Collector[zkclient.Observation], httpClient *http.Client,
	targets []probe.Target) map[string]probe.Result[zkclient.Observation] {
	return c.Collect(ctx, targets, observeCall(httpClient))
}

// observationChanged reports whether two answers of a server differ in what
// the controller acts on or shows: its role, read-only mode, version or
// voting members. Its zxid, uptime and counters move all the time.
func observationChanged(old, cur zkclient.Observation) bool {
	return old.Stat.Role != cur.Stat.Role || old.Stat.ReadOnly != cur.Stat.ReadOnly ||
		old.Stat.Version != cur.Stat.Version || !slices.Equal(old.Voting, cur.Voting)
}

func observeCall(httpClient *http.Client) probe.CallFunc[zkclient.Observation] {
	return func(ctx context.Context, t probe.Target) (zkclient.Observation, error) {
		return zkclient.Observe(ctx, httpClient, t.Address)
	}
}

// server is one pod of the StatefulSet and what its AdminServer answered.
type server struct {
	ordinal int
	pod     *corev1.Pod
	result  probe.Result[zkclient.Observation]
}

// id is the server's id (myid).
func (s *server) id() int { return build.ServerID(s.ordinal) }

// serving reports whether the server answered that it serves clients.
func (s *server) serving() bool { return s.result.OK() }

// role is the server's role, RoleUnknown unless it serves.
func (s *server) role() string {
	if !s.serving() {
		return zkv1.RoleUnknown
	}
	return string(s.result.Value.Stat.Role)
}

// ensemble is the observed state of a cluster's servers.
type ensemble struct {
	sts *appsv1.StatefulSet
	// servers by ordinal, for the pods that exist and are not terminating.
	servers map[int]*server
	// members is the committed membership: the leader's voting view, or
	// status.members when no leader answers.
	members []int
	// leader is the leading server, nil when none answers as leader.
	leader *server
	// highestPodOrdinal is the highest ordinal of the servers' pods,
	// terminating ones included; -1 without pods.
	highestPodOrdinal int
	// bootstrap: the cluster is new (no StatefulSet, no membership known)
	// and starts with its bootstrap members in this pass.
	bootstrap bool
	// created: the StatefulSet did not exist before this pass applied it.
	created bool
}

// observe reads the StatefulSet and pods, probes the servers, and fills
// status (readyReplicas, servers, leader, members, clientEndpoint,
// currentImage) from what it found.
func (c *Controller) observe(ctx *Context) (*ensemble, error) {
	zk := ctx.Obj
	e := &ensemble{servers: map[int]*server{}, highestPodOrdinal: -1}
	sts := &appsv1.StatefulSet{}
	switch err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: zk.Namespace, Name: zk.Name}, sts); {
	case err == nil:
		e.sts = sts
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get StatefulSet %s: %w", zk.Name, err)
	}
	pods, err := serverSet(zk).Pods(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	c.observeServers(ctx, zk, e, pods, ctx.Operation().Running())
	c.fillStatus(zk, e)
	return e, nil
}

// observeServers probes the server pods and reads their answers into e
// (readAnswers). An operation's steps (wait) decide on answers at most a
// second old and wait for them, up to the probe deadline; every other pass
// reads what the background probes last heard, and waits only for the
// first answers of servers not asked before.
func (c *Controller) observeServers(ctx context.Context, zk *Cluster, e *ensemble, pods map[int]*corev1.Pod, wait bool) {
	group := framework.Group(zk)
	last := c.lastCommit(zk)
	var targets []probe.Target
	for ordinal, pod := range pods {
		e.highestPodOrdinal = max(e.highestPodOrdinal, ordinal)
		if pod.DeletionTimestamp != nil {
			continue
		}
		e.servers[ordinal] = &server{ordinal: ordinal, pod: pod}
		if pod.Status.PodIP != "" {
			// Keyed by UID: a re-created pod must not inherit the answer
			// its predecessor gave under the same name.
			targets = append(targets, probe.Target{Group: group, Key: string(pod.UID),
				Address: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(zk.Spec.AdminPort)))})
		}
	}
	// Every server is asked again at once when any server pod changes: a
	// member's answer depends on its peers (a survivor that was not
	// serving serves again once replacements join, without its own pod
	// changing), and Ready waited up to a probe interval for it. So it is
	// after a committed membership change: the voting views change.
	revision := ensembleRevision(pods) + last.revision()
	for i := range targets {
		targets[i].Revision = revision
	}
	var results map[string]probe.Result[zkclient.Observation]
	if wait {
		results = ObserveEnsemble(ctx, c.stats, c.http, targets)
	} else {
		// A server not asked yet (every server, when this replica just
		// became leader) is waited for once: read as not answering, it
		// would show a serving ensemble as down (chaos seed 20261203).
		results = c.stats.WatchKnown(ctx, targets, observeCall(c.http))
	}
	c.stats.Forget(group, targets)
	e.readAnswers(results, fromInt32(zk.Status.Members), last)
}

// readAnswers gives each server its answer (results, by pod UID) and finds
// the leader and the committed membership: the leader's voting view, else
// statusMembers.
//
// An answer from before the scale step's last committed change (last)
// still names the leader while the server's next answer is not in:
// adding or removing another member does not move leadership
// (membersCommitted forgets every answer when the leader itself left).
// Its voting view may predate the change, so the membership is then the
// committed one. Of two servers answering as leader (a stale answer and a
// new leader's), the later answer wins.
func (e *ensemble) readAnswers(results map[string]probe.Result[zkclient.Observation], statusMembers []int, last memberCommit) {
	e.leader = nil
	for _, o := range e.ordinals() {
		s := e.servers[o]
		r, ok := results[string(s.pod.UID)]
		if !ok {
			r = probe.Result[zkclient.Observation]{Err: errors.New("the pod has no IP yet")}
		}
		s.result = r
		switch {
		case !s.serving() || r.Value.Stat.Role != zkclient.RoleLeader:
		case last.predates(r.ValueAt) && !slices.Contains(last.members, s.id()):
			// It led before the change removed it, and hands over.
		case e.leader == nil || r.ValueAt.After(e.leader.result.ValueAt):
			e.leader = s
		}
	}
	e.members = statusMembers
	switch {
	case e.leader == nil:
	case last.predates(e.leader.result.ValueAt):
		e.members = slices.Clone(last.members)
	default:
		e.members = slices.Clone(e.leader.result.Value.Voting)
	}
}

// memberCommit is the last membership change a cluster's scale step
// committed: when, and the members since.
type memberCommit struct {
	at      time.Time
	members []int
}

// revision is the commit's part of the probe targets' Revision, so that a
// commit has every server asked again at once.
func (m memberCommit) revision() string {
	if m.at.IsZero() {
		return ""
	}
	return fmt.Sprintf("members %v at %d", m.members, m.at.UnixNano())
}

// predates reports whether an answer obtained at valueAt came before the
// commit, so that its voting view may not show it.
func (m memberCommit) predates(valueAt time.Time) bool { return valueAt.Before(m.at) }

// membersCommitted records that the scale step committed members for zk
// while e was observed. The servers' answers are kept: forgetting them
// left status.leader empty, although the same server led throughout, until
// every server had answered again (issue 27: about 6 s of a scale-out);
// readAnswers takes the membership from the commit until the leader
// answers again. When the leader itself left (or none was known), a new
// one is being elected and servers that served may be looking for it:
// every answer is forgotten, and the next answers say so.
func (c *Controller) membersCommitted(zk *Cluster, e *ensemble, members []int) {
	c.mu.Lock()
	c.commits[zk.UID] = memberCommit{at: time.Now(), members: slices.Clone(members)}
	c.mu.Unlock()
	if e == nil || e.leader == nil || !slices.Contains(members, e.leader.id()) {
		c.stats.Forget(framework.Group(zk), nil)
	}
}

// lastCommit returns the last membership change committed for zk by this
// operator process, zero when none was.
func (c *Controller) lastCommit(zk *Cluster) memberCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits[zk.UID]
}

// forgetCluster drops what the controller keeps in memory about zk.
func (c *Controller) forgetCluster(zk *Cluster) {
	c.stats.Forget(framework.Group(zk), nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.zxidsAt, zk.UID)
	delete(c.sent, zk.UID)
	delete(c.commits, zk.UID)
}

// ordinals returns the ordinals of the observed servers, in order.
func (e *ensemble) ordinals() []int {
	out := make([]int, 0, len(e.servers))
	for o := range e.servers {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// member returns the server with id, nil when its pod does not exist.
func (e *ensemble) member(id int) *server { return e.servers[build.Ordinal(id)] }

// servingMembers counts the members among ids that serve.
func (e *ensemble) servingMembers(ids []int) int {
	n := 0
	for _, id := range ids {
		if s := e.member(id); s != nil && s.serving() {
			n++
		}
	}
	return n
}

// hasQuorum reports whether a majority of the committed members serve,
// one of them as leader.
func (e *ensemble) hasQuorum() bool {
	return e.leader != nil && len(e.members) > 0 && e.servingMembers(e.members) >= quorum(len(e.members))
}

// revisionKnown reports whether the StatefulSet's controller has seen its
// latest template, so that status.updateRevision names it.
func (e *ensemble) revisionKnown() bool {
	return workload.RevisionKnown(e.sts)
}

// stale returns the servers whose pods run an older revision of the pod
// template than the StatefulSet's latest, in ordinal order.
func (e *ensemble) stale() []*server {
	var out []*server
	for _, o := range e.ordinals() {
		s := e.servers[o]
		if s.pod.Labels[appsv1.ControllerRevisionHashLabelKey] != e.sts.Status.UpdateRevision {
			out = append(out, s)
		}
	}
	return out
}

// quorum is the majority of n voting members.
func quorum(n int) int { return n/2 + 1 }

func containerImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == build.ContainerName {
			return c.Image
		}
	}
	return ""
}

func toInt32(ids []int) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

func fromInt32(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// clientAddresses returns the client addresses (podIP:2181) of the serving
// servers, the leader first (the client may pick any of them; a follower
// forwards a reconfiguration to the leader).
func (e *ensemble) clientAddresses() []string {
	var out []string
	for _, o := range e.ordinals() {
		s := e.servers[o]
		if !s.serving() {
			continue
		}
		addr := net.JoinHostPort(s.pod.Status.PodIP, strconv.Itoa(int(build.ClientPort)))
		if s == e.leader {
			out = append([]string{addr}, out...)
		} else {
			out = append(out, addr)
		}
	}
	return out
}

// replicas returns the StatefulSet's replicas, spec.replicas before it
// exists.
func (e *ensemble) replicas(zk *Cluster) int32 {
	if e.sts != nil && e.sts.Spec.Replicas != nil {
		return *e.sts.Spec.Replicas
	}
	return zk.Spec.Replicas
}

// ensembleRevision is the probe targets' Revision: the server pods'
// resourceVersions in ordinal order, so that a change to any pod asks every
// server again.
func ensembleRevision(pods map[int]*corev1.Pod) string {
	var b strings.Builder
	for _, ordinal := range slices.Sorted(maps.Keys(pods)) {
		b.WriteString(pods[ordinal].ResourceVersion)
		b.WriteByte(',')
	}
	return b.String()
}
