package manager

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
)

// transform returns a cache transform that strips an object of type T of
// its managedFields, which Steward never reads (its applies go to the API
// server), then slims it further with keep, and leaves other objects
// alone. keep must be idempotent: the informer may transform an object
// twice.
func transform[T client.Object](keep func(T)) func(any) (any, error) {
	return func(obj any) (any, error) {
		o, ok := obj.(T)
		if !ok {
			return obj, nil
		}
		o.SetManagedFields(nil)
		keep(o)
		return o, nil
	}
}

// slimPod is the cache's transform of a Pod: it keeps what a controller,
// a watch's mapping or a patch of Steward reads of a pod, and drops the
// rest (managedFields, probes, resources, commands, mounts, placement,
// most of the status). Every pod of the cluster is cached (a config
// ConfigMap is collected only when no pod uses it), so pods grow the
// operator's memory with every cluster it runs, and with every other
// workload of the cluster. Kept:
//
//   - metadata but managedFields: labels (selectors, revisions, watch
//     mappings), annotations (config revisions, template hashes, drain
//     state), owners, UID, timestamps;
//   - each container's and init container's name and image (status's
//     current images, upgrades), and its references to ConfigMaps (env
//     configMapKeyRef, envFrom), with the volumes that are ConfigMaps,
//     projections or claims, for the config ConfigMaps' collection;
//   - readinessGates (readiness), nodeName;
//   - status: phase, pod IP (probes), conditions (readiness, the serving
//     gate, scheduling), and each container status's name, ready,
//     restart count and state (why a pod does not start).
//
// Patches of a cached pod (its conditions, its annotations) are diffs of
// two copies stripped alike.
var slimPod = transform(func(pod *corev1.Pod) {
	pod.Spec = slimPodSpec(pod.Spec)
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		PodIP:                 pod.Status.PodIP,
		Conditions:            pod.Status.Conditions,
		ContainerStatuses:     slimContainerStatuses(pod.Status.ContainerStatuses),
		InitContainerStatuses: slimContainerStatuses(pod.Status.InitContainerStatuses),
	}
})

// slimPodSpec keeps of a pod's spec, or a pod template's, what Steward
// reads: its containers' names, images and ConfigMap references, the
// volumes that are ConfigMaps, projections or claims, readiness gates and
// the node.
func slimPodSpec(in corev1.PodSpec) corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers:     slimContainers(in.Containers),
		InitContainers: slimContainers(in.InitContainers),
		ReadinessGates: in.ReadinessGates,
		NodeName:       in.NodeName,
	}
	for _, v := range in.Volumes {
		if v.ConfigMap != nil || v.Projected != nil || v.PersistentVolumeClaim != nil {
			spec.Volumes = append(spec.Volumes, v)
		}
	}
	return spec
}

// slimStatefulSet is the cache's transform of a StatefulSet: its pod
// template, the bulk of it, is kept as slimPod keeps a pod's spec (the
// config ConfigMaps' collection reads the templates' references), with its
// labels and annotations; the rest of the spec, the volume claim
// templates whole (volume growth compares them, and a dry run or an apply
// during a flow sends the live ones back), and the status are kept. Of a
// cached StatefulSet, the controllers read the replicas, the status's
// revisions and counts, the claim templates and the metadata; a patch of
// one (OceanBase's replicas) is a diff of two copies stripped alike; and
// Apply, when it skips an unchanged child, hands its caller the cached
// copy, of which callers read the same.
var slimStatefulSet = transform(func(sts *appsv1.StatefulSet) {
	t := &sts.Spec.Template
	t.ObjectMeta = metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}
	t.Spec = slimPodSpec(t.Spec)
})

func slimContainers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, EnvFrom: c.EnvFrom}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				out[i].Env = append(out[i].Env, e)
			}
		}
	}
	return out
}

func slimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.Name, Ready: s.Ready, RestartCount: s.RestartCount, State: s.State}
	}
	return out
}

// slimService is the cache's transform of a Service: its metadata, and of
// the rest what Steward reads of a cached Service, its type, cluster IP
// and ports (OceanBase's servers' addresses, GPSS's external endpoint)
// and its load balancer's ingress; the selector, IP families and
// traffic policies are dropped. Apply hands back the cached copy of an
// unchanged child, and no caller reads more of a Service than that.
var slimService = transform(func(svc *corev1.Service) {
	svc.Spec = corev1.ServiceSpec{Type: svc.Spec.Type, ClusterIP: svc.Spec.ClusterIP, Ports: svc.Spec.Ports}
	svc.Status = corev1.ServiceStatus{LoadBalancer: svc.Status.LoadBalancer}
})

// slimClaim is the cache's transform of a volume claim (Steward's only):
// of a cached claim the controllers read the name, labels, owners, UID
// and deletion; the binder's annotations, the spec and the status are
// dropped. Volume growth reads the claims' sizes through the API reader,
// not the cache. A patch of a cached claim (its departed label) is a
// diff of two copies stripped alike.
var slimClaim = transform(func(pvc *corev1.PersistentVolumeClaim) {
	pvc.Annotations = nil
	pvc.Spec = corev1.PersistentVolumeClaimSpec{}
	pvc.Status = corev1.PersistentVolumeClaimStatus{}
})

// slimConfigMap is the cache's transform of a ConfigMap: it drops the data
// of the config ConfigMaps (framework.ConfigLabel), which the pods read and
// the operator never reads back (their name is their content's hash), a
// few KiB each for every cluster. Every other ConfigMap keeps its data:
// ZooKeeper's members and MatrixOne's log stores are read back from the
// cache, and a ConfigMap of theirs that lost its labels must not read as
// empty.
var slimConfigMap = transform(func(cm *corev1.ConfigMap) {
	if _, config := cm.Labels[framework.ConfigLabel]; config {
		cm.Data, cm.BinaryData = nil, nil
	}
})
