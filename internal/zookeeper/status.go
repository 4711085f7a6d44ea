package zookeeper

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// fillStatus writes what e observed into zk's status.
func (c *Controller) fillStatus(zk *Cluster, e *ensemble) {
	st := &zk.Status
	previous := serversByName(st.Servers)
	fresh := c.zxidsDue(zk, time.Now())
	st.ClientEndpoint = build.ClientEndpoint(zk, c.opts.ClusterDomain)
	st.Members = toInt32(e.members)
	st.Leader = ""
	if e.leader != nil {
		st.Leader = e.leader.pod.Name
	}
	st.ReadyReplicas = 0
	st.Servers = nil
	images := map[string]bool{}
	for _, ordinal := range e.ordinals() {
		s := e.servers[ordinal]
		if workload.IsReady(s.pod) {
			st.ReadyReplicas++
		}
		if img := containerImage(s.pod); img != "" {
			images[img] = true
		}
		ss := zkv1.ServerStatus{Name: s.pod.Name, ID: int32(s.id()), Address: s.pod.Status.PodIP}
		if s.serving() {
			ss.LastZxid = s.result.Value.Stat.LastZxid.String()
			// Every write moves a server's zxid: keep the one status has
			// until the next refresh, unless the server changed role,
			// so that a busy cluster is not a status write per pass.
			if p, ok := previous[s.pod.Name]; ok && !fresh && p.role == s.role() && p.LastZxid != "" && p.Address == ss.Address {
				ss.LastZxid = p.LastZxid
			}
		} else if s.result.Err != nil {
			// The class and a text that stays while the failure does: a
			// server that keeps timing out writes status once.
			ss.Error = s.result.Describe()
		}
		if st.Servers == nil {
			st.Servers = map[string][]zkv1.ServerStatus{}
		}
		st.Servers[s.role()] = append(st.Servers[s.role()], ss)
	}
	// The image every server runs: kept during an image change until all
	// run the new one.
	if len(images) == 1 && len(e.servers) > 0 {
		for img := range images {
			st.CurrentImage = img
		}
	}
}

// zxidsDue reports whether the servers' zxids in zk's status are due for a
// refresh (at most once per resync period), and if so records now as the
// refresh.
func (c *Controller) zxidsDue(zk *Cluster, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.zxidsAt[zk.UID]; ok && now.Sub(last) < c.opts.Resync {
		return false
	}
	c.zxidsAt[zk.UID] = now
	return true
}

// previousServer is a server as status last recorded it.
type previousServer struct {
	zkv1.ServerStatus
	role string
}

func serversByName(servers map[string][]zkv1.ServerStatus) map[string]previousServer {
	out := map[string]previousServer{}
	for role, list := range servers {
		for _, s := range list {
			out[s.Name] = previousServer{ServerStatus: s, role: role}
		}
	}
	return out
}

// setConditions sets every condition from e, one setter each.
func (c *Controller) setConditions(ctx *Context, e *ensemble) {
	setAvailable(ctx, e)
	setProgressingAndReady(ctx, e)
}

// setAvailable: a quorum of the members serves, with a leader.
func setAvailable(ctx *Context, e *ensemble) {
	if e.hasQuorum() {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionTrue, commonv1.ReasonQuorumServing,
			fmt.Sprintf("%d of %d members serve, %s leads", e.servingMembers(e.members), len(e.members), e.leader.pod.Name))
		return
	}
	ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, commonv1.ReasonNoQuorum,
		fmt.Sprintf("%d of %d members serve, no leader answers", e.servingMembers(e.members), len(e.members)))
}

// setProgressingAndReady sets the two conditions one verdict gives
// (progress): Progressing while the cluster is not yet what the spec
// says, Ready once it is.
func setProgressingAndReady(ctx *Context, e *ensemble) {
	reason, message := progress(ctx.Obj, e)
	if reason == "" {
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, commonv1.ReasonStable, "")
		ctx.SetReady(true, "", fmt.Sprintf("%s, %s leads", count(len(e.members), "server serves", "servers serve"), e.leader.pod.Name))
		return
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
}

// progress says why the cluster is not Ready yet; an empty reason when it
// is: as many members as spec.replicas, each serving, on the latest
// revision, with a leader. Until the cluster is Ready for the first time
// the reason is Creating, whatever step it waits for (the message says
// which).
func progress(zk *Cluster, e *ensemble) (reason, message string) {
	reason, message = notReady(zk, e)
	if reason != "" && creating(zk) {
		return commonv1.ReasonCreating, message
	}
	return reason, message
}

// notReady is progress without the Creating phase.
func notReady(zk *Cluster, e *ensemble) (reason, message string) {
	want := int(zk.Spec.Replicas)
	switch {
	case e.sts == nil:
		return commonv1.ReasonCreating, "creating the servers"
	case len(e.members) != want || !slices.Equal(e.members, build.IDs(zk.Spec.Replicas)):
		return commonv1.ReasonScaling, fmt.Sprintf("members %v, want %d", e.members, want)
	case len(e.servers) != want && ptr.Deref(e.sts.Spec.Replicas, 0) == zk.Spec.Replicas:
		// No scaling: pods went (deleted, evicted, a node lost) and the
		// StatefulSet re-creates them.
		return zkv1.ReasonServersNotServing, fmt.Sprintf("%d of %d server pods exist", len(e.servers), want)
	case len(e.servers) != want:
		return commonv1.ReasonScaling, fmt.Sprintf("%d server pods, want %d", len(e.servers), want)
	case !e.revisionKnown():
		return commonv1.ReasonRestarting, "waiting for the StatefulSet controller to see the latest pod template"
	case len(e.stale()) > 0:
		return commonv1.ReasonRestarting, count(len(e.stale()), "server runs", "servers run") + " an older revision"
	case e.leader == nil:
		return commonv1.ReasonNoLeader, "no server answers as leader"
	}
	for _, id := range e.members {
		if s := e.member(id); s == nil || !s.serving() {
			// A server that crash-loops (a full volume, a log it cannot
			// read) says how it last ended, which a user cannot see in
			// "does not serve" alone; one that waits for something else
			// (a node, its image) says what.
			if s != nil && s.pod != nil && !workload.IsReady(s.pod) {
				if d := cmp.Or(workload.LastExit(s.pod, build.ContainerName), workload.NotReadyDetail(s.pod)); d != "" {
					return zkv1.ReasonServersNotServing, fmt.Sprintf("server %d does not serve: %s", id, d)
				}
			}
			return zkv1.ReasonServersNotServing, fmt.Sprintf("server %d does not serve yet", id)
		}
	}
	return "", ""
}

// creating reports whether the cluster has never been Ready: its Ready
// condition is absent, or False with reason Creating (progress keeps that
// reason until the first Ready).
func creating(zk *Cluster) bool {
	c := meta.FindStatusCondition(zk.Status.Conditions, framework.ConditionReady)
	return c == nil || c.Status != metav1.ConditionTrue && c.Reason == commonv1.ReasonCreating
}

// count says n with the singular or plural noun: "1 server", "3 servers".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
