package gpss

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
)

// cluster is what a pass observed.
type cluster struct {
	// sts is the instances' StatefulSet; nil before it exists.
	sts *appsv1.StatefulSet
	// pods are the instances' pods by ordinal (not terminating).
	pods map[int]*corev1.Pod
	// etcdReady: the managed etcd's members are all ready, or the etcd is
	// the user's.
	etcdReady bool
	// etcdMessage says what the managed etcd waits for.
	etcdMessage string
	// highestPod is the highest ordinal of the instances' pods, terminating
	// ones included (a terminating instance may still run and take jobs);
	// -1 without pods.
	highestPod int
	// gpfdist are the gpfdist Services by ordinal (not being deleted).
	gpfdist map[int]*corev1.Service
	// answers are what each instance last answered to ListJobs, by
	// ordinal; none for a pod without an address.
	answers map[int]probe.Result[instanceAnswer]
}

// readyPods counts the instances that serve: pod ready, ListJobs
// answered.
func (cl *cluster) readyPods() int {
	n := 0
	for _, p := range cl.pods {
		if serving(p) {
			n++
		}
	}
	return n
}

// observe reads the managed etcd's and the instances' StatefulSets, the
// instances' pods and Services, and what each instance last answered.
func (c *Controller) observe(ctx *Context) (*cluster, error) {
	g := ctx.Obj
	cl := &cluster{pods: map[int]*corev1.Pod{}, gpfdist: map[int]*corev1.Service{}, etcdReady: true, highestPod: -1}
	if build.ManagesEtcd(g) {
		etcd := &appsv1.StatefulSet{}
		err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: build.EtcdName(g)}, etcd)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("get the etcd StatefulSet: %w", err)
		}
		want := g.Spec.Etcd.Managed.Replicas // set by Default
		cl.etcdReady = etcd.Status.ReadyReplicas >= want && etcd.Status.ObservedGeneration == etcd.Generation
		cl.etcdMessage = fmt.Sprintf("%d of %d etcd members ready", etcd.Status.ReadyReplicas, want)
	}
	sts := &appsv1.StatefulSet{}
	switch err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Name}, sts); {
	case err == nil:
		cl.sts = sts
	case client.IgnoreNotFound(err) != nil:
		return nil, fmt.Errorf("get the instances' StatefulSet: %w", err)
	}
	set := workload.Set{Namespace: g.Namespace, Name: build.InstancesName(g), Selector: build.Selector(g, build.ComponentInstance)}
	pods, err := set.Pods(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	for ordinal, p := range pods {
		cl.highestPod = max(cl.highestPod, ordinal)
		if p.DeletionTimestamp.IsZero() {
			cl.pods[ordinal] = p
		}
	}
	var svcs corev1.ServiceList
	if err := ctx.Client.List(ctx, &svcs, client.InNamespace(g.Namespace),
		client.MatchingLabels(build.Selector(g, build.ComponentGpfdist))); err != nil {
		return nil, fmt.Errorf("list gpfdist Services: %w", err)
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if ordinal, err := strconv.Atoi(svc.Labels[build.LabelOrdinal]); err == nil && svc.DeletionTimestamp.IsZero() {
			cl.gpfdist[ordinal] = svc
		}
	}
	cl.answers = c.watchInstances(ctx, cl.pods)
	return cl, nil
}

// stale returns the ordinals of the instances whose pods run another pod
// template than the StatefulSet's latest (its status.updateRevision), sorted;
// none while the StatefulSet has not computed that revision, when no pod
// can be told stale. Any change of the template counts (image, gpss.json,
// resources, the etcd's endpoints, placement), not only the image.
func stale(cl *cluster) []int {
	if !workload.RevisionKnown(cl.sts) {
		return nil
	}
	var out []int
	for ordinal, p := range cl.pods {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != cl.sts.Status.UpdateRevision {
			out = append(out, ordinal)
		}
	}
	slices.Sort(out)
	return out
}

// upToDate reports whether spec.replicas instances exist, each ready on the
// StatefulSet's latest template.
func (cl *cluster) upToDate(g *Cluster) bool {
	return workload.RevisionKnown(cl.sts) && len(cl.pods) == int(g.Spec.Replicas) &&
		cl.readyPods() == len(cl.pods) && len(stale(cl)) == 0
}

func podImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == build.ContainerName {
			return c.Image
		}
	}
	return ""
}
