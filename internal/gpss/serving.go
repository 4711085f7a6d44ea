package gpss

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpssapi/job"
)

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// An instance serves when it answers GPSS's job API: ListJobs over gRPC on
// its own address, which needs it to reach the cluster's etcd. GPSS has no
// health RPC and documents no membership API, so this is the whole of what
// the controller can ask an instance; an accepted TCP connection (the
// container's readiness probe) is not enough: an instance cut off from its
// etcd accepts connections and answers nothing. The collector asks every
// instance in the background (servingInterval while it answers, at once
// when its pod or address changes) and never holds up a pass; the
// controller writes the answer into the pod's build.ServingCondition,
// which the pod names as a readiness gate.
const (
	servingInterval = 5 * time.Second
	// servingMaxAge is how old an instance's last good answer may be for it
	// to count as serving: three intervals, so that one late answer on a
	// busy machine does not take an instance out of its Service.
	servingMaxAge = 3 * servingInterval
	// reasonAnswers and reasonNoAnswer are the serving condition's reasons.
	reasonAnswers  = "AnswersListJobs"
	reasonNoAnswer = "NoAnswer"
)

// instanceAnswer is what an instance answered to ListJobs: every job's
// status code by id (any instance lists the cluster's jobs).
type instanceAnswer struct {
	codes map[string]job.JobStatusCode
}

// InstanceAddress returns the gRPC address of an instance's pod ("" while
// it has none). Tests give one that reaches instances outside a cluster.
type InstanceAddress func(g *Cluster, pod *corev1.Pod) string

// podAddress is the default InstanceAddress: the pod's IP and the gRPC
// port.
func podAddress(g *Cluster, pod *corev1.Pod) string {
	if pod.Status.PodIP == "" {
		return ""
	}
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(g.Spec.Ports.GRPC)))
}

func newServingCollector(notify func(string)) *probe.Collector[instanceAnswer] {
	return probe.NewCollector(probe.Options[instanceAnswer]{
		Kind:        "GpssCluster",
		CallTimeout: jobCallTimeout,
		Interval:    servingInterval,
		MaxInterval: 2 * servingInterval,
		Changed: func(old, cur instanceAnswer) bool {
			return !maps.Equal(old.codes, cur.codes)
		},
		Notify: notify,
	})
}

// listJobs is the collector's call: ListJobs on one instance.
func listJobs(ctx context.Context, t probe.Target) (instanceAnswer, error) {
	conn, err := grpc.NewClient(t.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return instanceAnswer{}, fmt.Errorf("gRPC %s: %w", t.Address, err)
	}
	defer conn.Close()
	codes, err := (&jobs{client: job.NewJobServiceClient(conn)}).list(ctx)
	if err != nil {
		return instanceAnswer{}, err
	}
	return instanceAnswer{codes: codes}, nil
}

// watchInstances returns what each instance last answered, by ordinal, and
// has the collector keep asking them; an instance whose pod has no address
// yet has no result.
func (c *Controller) watchInstances(ctx *Context, pods map[int]*corev1.Pod) map[int]probe.Result[instanceAnswer] {
	g := ctx.Obj
	var targets []probe.Target
	byKey := map[string]int{}
	for ordinal, p := range pods {
		addr := c.opts.InstanceAddress(g, p)
		if addr == "" {
			continue
		}
		// Keyed by the pod's UID: a re-created pod is a new instance, which
		// must answer itself before it counts as serving.
		targets = append(targets, probe.Target{Group: framework.Group(g), Key: string(p.UID), Address: addr})
		byKey[string(p.UID)] = ordinal
	}
	out := map[int]probe.Result[instanceAnswer]{}
	for key, r := range c.instances.Watch(targets, listJobs) {
		out[byKey[key]] = r
	}
	// Pods gone (a rollout's, a scale-in's) are asked no more.
	c.instances.Forget(framework.Group(g), targets)
	return out
}

// servingCondition is the serving condition an instance's answer gives its
// pod; false when no call has completed yet (the condition stays as it
// is). A good answer younger than servingMaxAge still counts when the last
// call failed.
func servingCondition(r probe.Result[instanceAnswer], ok bool, now time.Time) (corev1.PodCondition, bool) {
	switch {
	case !ok || r.At.IsZero():
		return corev1.PodCondition{}, false
	case r.OK() || (!r.ValueAt.IsZero() && now.Sub(r.ValueAt) <= servingMaxAge):
		return corev1.PodCondition{Type: build.ServingCondition, Status: corev1.ConditionTrue, Reason: reasonAnswers,
			Message: "the instance answers ListJobs"}, true
	}
	return corev1.PodCondition{Type: build.ServingCondition, Status: corev1.ConditionFalse, Reason: reasonNoAnswer,
		Message: "ListJobs: " + r.Describe()}, true
}

// setServing writes each instance's answer into its pod's serving
// condition, the pod's readiness gate.
func (c *Controller) setServing(ctx *Context, cl *cluster) error {
	now := time.Now()
	for _, ordinal := range slices.Sorted(maps.Keys(cl.pods)) {
		p := cl.pods[ordinal]
		r, ok := cl.answers[ordinal]
		cond, known := servingCondition(r, ok, now)
		if !known {
			continue
		}
		if cond.Status == corev1.ConditionTrue && !r.OK() {
			// Serving on an answer that ages: look again when it is too old,
			// which no answer of the collector announces.
			c.recheckAt(ctx.Obj, r.ValueAt.Add(servingMaxAge))
		}
		wrote, err := workload.SetPodCondition(ctx, ctx.Client, p, cond)
		if apierrors.IsNotFound(err) {
			continue // deleted since the cache listed it
		}
		if err != nil {
			return err
		}
		if wrote {
			ctx.Log.Info("Instance serving changed", "pod", p.Name, "serving", cond.Status, "message", cond.Message)
		}
	}
	return nil
}

// recheckAt has a pass of g run at when (once, however often it is asked
// for the same moment).
func (c *Controller) recheckAt(g *Cluster, when time.Time) {
	key := fmt.Sprintf("%s@%d", framework.Group(g), when.UnixNano())
	if _, pending := c.rechecks.LoadOrStore(key, true); pending {
		return
	}
	group := framework.Group(g)
	time.AfterFunc(time.Until(when)+100*time.Millisecond, func() {
		c.rechecks.Delete(key)
		c.trigger.Enqueue(group)
	})
}

// crashing reports whether a pod's containers are not ready (a crash loop,
// a start that fails): the kubelet's own verdict, apart from the serving
// gate, which a slow answer alone can turn False.
func crashing(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}

// answeredNotServing reports whether an instance was asked and does not
// serve: its serving condition is False.
func answeredNotServing(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == build.ServingCondition {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// unheard reports whether some instance's pod runs without a serving
// condition yet: just created, or the collector's first answer pending.
func unheard(cl *cluster) bool {
	for _, p := range cl.pods {
		if !crashing(p) && !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == build.ServingCondition
		}) {
			return true
		}
	}
	return false
}

// notServingSince is when an instance stopped serving: when its pod
// stopped being ready, or when its serving condition turned False while
// the pod still said ready (the kubelet has not caught up), or its pod's
// creation while neither says.
func notServingSince(p *corev1.Pod) time.Time {
	if !workload.IsReady(p) {
		return workload.UnreadySince(p)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == build.ServingCondition && c.Status != corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// serving reports whether an instance's pod is ready and its instance
// answers ListJobs: the kubelet makes a pod Ready only once its serving
// condition is True too, and the controller asks both so that it never
// counts an instance it has not heard from.
func serving(p *corev1.Pod) bool {
	if !workload.IsReady(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == build.ServingCondition {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maxJobsInError bounds status.jobs.inError.
const maxJobsInError = 10

// recordJobs counts the jobs in status.jobs from the freshest answer an
// instance gave within servingMaxAge (any instance lists the cluster's
// jobs), or clears it when none did: the count is never older than that.
// Jobs entering JOB_ERROR record a Warning Event.
func recordJobs(ctx *Context, cl *cluster) {
	g := ctx.Obj
	st := jobsStatus(cl.answers, time.Now())
	if before := g.Status.Jobs; st != nil && st.Error > 0 && (before == nil || before.Error == 0) {
		ctx.Event(corev1.EventTypeWarning, gpssv1.EventJobsInError, "%d jobs in error: %s", st.Error, strings.Join(st.InError, ", "))
	}
	g.Status.Jobs = st
}

// jobsStatus counts the jobs of the freshest answer younger than
// servingMaxAge at now; nil when there is none.
func jobsStatus(answers map[int]probe.Result[instanceAnswer], now time.Time) *gpssv1.JobsStatus {
	var freshest *probe.Result[instanceAnswer]
	for _, r := range answers {
		if r.ValueAt.IsZero() || now.Sub(r.ValueAt) > servingMaxAge {
			continue
		}
		if freshest == nil || r.ValueAt.After(freshest.ValueAt) {
			freshest = &r
		}
	}
	if freshest == nil {
		return nil
	}
	st := &gpssv1.JobsStatus{}
	var inError []string
	for id, code := range freshest.Value.codes {
		switch code {
		case job.JobStatusCode_JOB_RUNNING:
			st.Running++
		case job.JobStatusCode_JOB_STOPPED:
			st.Stopped++
		case job.JobStatusCode_JOB_ERROR:
			st.Error++
			inError = append(inError, id)
		}
	}
	slices.Sort(inError)
	st.InError = inError[:min(len(inError), maxJobsInError)]
	return st
}
