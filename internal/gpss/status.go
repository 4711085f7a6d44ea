package gpss

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
)

// instancesStatus fills status.instances, readyReplicas, the images and
// the endpoints (which the flows' job calls use).
func (c *Controller) instancesStatus(ctx *Context, cl *cluster) {
	g := ctx.Obj
	g.Status.EtcdEndpoints = build.EtcdEndpoints(g, c.opts.ClusterDomain)
	g.Status.GRPCEndpoint = net.JoinHostPort(
		fmt.Sprintf("%s.%s.svc.%s", build.GRPCServiceName(g), g.Namespace, c.opts.ClusterDomain),
		strconv.Itoa(int(g.Spec.Ports.GRPC)))
	n := int(g.Spec.Replicas)
	for ordinal := range cl.pods {
		n = max(n, ordinal+1)
	}
	var instances []gpssv1.InstanceStatus
	for ordinal := range n {
		in := gpssv1.InstanceStatus{Name: build.PodName(g, ordinal)}
		if ordinal < int(g.Spec.Replicas) {
			in.GpfdistAddress = c.gpfdistAddress(g, ordinal, cl.gpfdist[ordinal])
		}
		if p, ok := cl.pods[ordinal]; ok {
			in.Ready = serving(p)
			in.Image = podImage(p)
		}
		instances = append(instances, in)
	}
	g.Status.Instances = instances
	g.Status.ReadyReplicas = int32(cl.readyPods())
}

// recordRevision moves status.currentImage and status.configRevision to
// what the instances run, once every instance runs the latest template and
// is ready: status never names an image or a gpss.json that some instance
// does not run yet.
func recordRevision(g *Cluster, cl *cluster) {
	if !cl.upToDate(g) {
		return
	}
	var p *corev1.Pod
	for _, p = range cl.pods {
		break
	}
	if p == nil {
		return
	}
	if img := podImage(p); img != g.Status.CurrentImage {
		if g.Status.CurrentImage != "" {
			g.Status.PreviousImage = g.Status.CurrentImage
		}
		g.Status.CurrentImage = img
	}
	g.Status.ConfigRevision = p.Annotations[build.ConfigRevisionAnnotation]
}

// gpfdistAddress is where the instance's gpfdist is reached from outside
// when its Service (svc, nil before it exists) allows it: a load balancer's
// ingress, or a node port on any node's address; else its cluster DNS name.
func (c *Controller) gpfdistAddress(g *Cluster, ordinal int, svc *corev1.Service) string {
	port := strconv.Itoa(int(g.Spec.Ports.Gpfdist))
	inCluster := net.JoinHostPort(fmt.Sprintf("%s.%s.svc.%s", build.GpfdistServiceName(g, ordinal), g.Namespace, c.opts.ClusterDomain), port)
	if svc == nil {
		return inCluster
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if host := cmp.Or(in.IP, in.Hostname); host != "" {
				return net.JoinHostPort(host, port)
			}
		}
	case corev1.ServiceTypeNodePort:
		if len(svc.Spec.Ports) > 0 && svc.Spec.Ports[0].NodePort != 0 {
			return "<node>:" + strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
		}
	}
	return inCluster
}

// setConditions sets every condition from what the pass observed, one
// setter each.
func (c *Controller) setConditions(ctx *Context, cl *cluster) {
	setAvailable(ctx, cl)
	setProgressingAndReady(ctx, cl)
}

// setAvailable: an instance serves gpsscli.
func setAvailable(ctx *Context, cl *cluster) {
	if ready := cl.readyPods(); ready > 0 {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionTrue, "InstancesReady",
			fmt.Sprintf("%d of %d instances ready", ready, ctx.Obj.Spec.Replicas))
		return
	}
	ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, gpssv1.ReasonInstancesNotReady, "no instance is ready")
}

// setProgressingAndReady sets the two conditions one verdict gives
// (notReady): Progressing while the cluster is not yet what the spec says,
// Ready once it is.
func setProgressingAndReady(ctx *Context, cl *cluster) {
	g := ctx.Obj
	reason, message := notReady(g, cl)
	if reason != "" && creating(g) {
		reason = commonv1.ReasonCreating
	}
	if reason == "" {
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, commonv1.ReasonStable, "")
		ctx.SetReady(true, "", fmt.Sprintf("%d instances ready", cl.readyPods()))
		return
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
}

// notReady says why the cluster is not Ready; an empty reason when it is:
// the etcd ready, spec.replicas instances, each ready on the latest pod
// template, and no job that a scale-in stopped waiting to run again.
func notReady(g *Cluster, cl *cluster) (reason, message string) {
	want := int(g.Spec.Replicas)
	switch {
	case !cl.etcdReady && cl.sts == nil:
		return gpssv1.ReasonWaitingForEtcd, "waiting for the etcd: " + cl.etcdMessage
	case cl.sts == nil:
		return commonv1.ReasonCreating, "creating the instances"
	case int(ptr.Deref(cl.sts.Spec.Replicas, 0)) != want:
		return commonv1.ReasonScaling, fmt.Sprintf("%d instances, want %d", ptr.Deref(cl.sts.Spec.Replicas, 0), want)
	case len(g.Status.StoppedJobs) > 0:
		return commonv1.ReasonScaling, fmt.Sprintf("%d jobs stopped for a scale-in do not run again yet", len(g.Status.StoppedJobs))
	case !workload.RevisionKnown(cl.sts):
		return gpssv1.ReasonInstancesNotReady, "the StatefulSet's controller has not observed its latest spec yet"
	case len(cl.pods) != want:
		return gpssv1.ReasonInstancesNotReady, fmt.Sprintf("%d of %d instance pods exist", len(cl.pods), want)
	}
	if old := stale(cl); len(old) > 0 {
		p := cl.pods[old[len(old)-1]]
		return commonv1.ReasonRestarting, fmt.Sprintf("%d of %d instances run an earlier pod template (%s runs revision %s, the latest is %s)",
			len(old), want, p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey], cl.sts.Status.UpdateRevision)
	}
	for _, ordinal := range slices.Sorted(maps.Keys(cl.pods)) {
		if p := cl.pods[ordinal]; !serving(p) {
			return gpssv1.ReasonInstancesNotReady, workload.NotReadyMessage(p)
		}
	}
	return "", ""
}

// creating reports whether the cluster has never been Ready.
func creating(g *Cluster) bool {
	c := meta.FindStatusCondition(g.Status.Conditions, framework.ConditionReady)
	return c == nil || c.Status != metav1.ConditionTrue && c.Reason == commonv1.ReasonCreating
}
