package manager

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/internal/framework"
)

// TestSlimPod checks what the cache keeps of a pod: what Steward reads
// (labels, annotations, images, ConfigMap references, readiness gates, IP,
// conditions, container states), and nothing of the rest; twice is once.
func TestSlimPod(t *testing.T) {
	pod, want := podFixture()
	checkTransform(t, slimPod, pod, want)
}

// TestSlimStatefulSet checks what the cache keeps of a StatefulSet: its
// pod template as slimPod keeps a pod's spec, and the rest whole (the
// claim templates above all).
func TestSlimStatefulSet(t *testing.T) {
	pod, slim := podFixture()
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	templateMeta := metav1.ObjectMeta{Labels: map[string]string{"app": "c"}, Annotations: map[string]string{"steward.dev/config-revision": "1"}}
	set := func(template corev1.PodTemplateSpec) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 3, Labels: map[string]string{"app": "c"}},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](3), ServiceName: "c-headless", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "c"}},
				PodManagementPolicy: appsv1.ParallelPodManagement, Template: template,
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 2, UpdateRevision: "c-1", CurrentRevision: "c-0"},
		}
	}
	full := set(corev1.PodTemplateSpec{ObjectMeta: templateMeta, Spec: pod.Spec})
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "steward"}}
	full.Spec.Template.Name = "ignored"
	checkTransform(t, slimStatefulSet, full, set(corev1.PodTemplateSpec{ObjectMeta: templateMeta, Spec: slim.Spec}))
}

// TestSlimService checks what the cache keeps of a Service: its metadata,
// type, cluster IP, ports and load balancer ingress, nothing of the rest.
func TestSlimService(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "zk-client", Labels: map[string]string{"app.kubernetes.io/instance": "zk"},
		Annotations: map[string]string{"a": "b"}, OwnerReferences: []metav1.OwnerReference{{Name: "zk", UID: "u"}}}
	ports := []corev1.ServicePort{{Name: "client", Port: 2181, TargetPort: intstr.FromInt32(2181), NodePort: 30181}}
	ingress := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.9"}}}
	full := &corev1.Service{ObjectMeta: *meta.DeepCopy(), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.7", ClusterIPs: []string{"10.96.0.7"}, Ports: ports,
		Selector: map[string]string{"app.kubernetes.io/instance": "zk"}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		SessionAffinity: corev1.ServiceAffinityNone, PublishNotReadyAddresses: true,
	}, Status: corev1.ServiceStatus{LoadBalancer: ingress, Conditions: []metav1.Condition{{Type: "x"}}}}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "steward"}}
	checkTransform(t, slimService, full, &corev1.Service{ObjectMeta: meta,
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.7", Ports: ports},
		Status: corev1.ServiceStatus{LoadBalancer: ingress}})
}

// TestSlimClaim checks what the cache keeps of a volume claim: its
// metadata but the binder's annotations; nothing of its spec and status.
func TestSlimClaim(t *testing.T) {
	now := metav1.Now()
	meta := metav1.ObjectMeta{Name: "data-zk-0", UID: "u", DeletionTimestamp: &now, Finalizers: []string{"kubernetes.io/pvc-protection"},
		Labels: map[string]string{"app.kubernetes.io/instance": "zk", "zookeeper.steward.dev/departed": "true"}}
	full := &corev1.PersistentVolumeClaim{ObjectMeta: *meta.DeepCopy(), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-1",
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}
	full.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "n1"}
	checkTransform(t, slimClaim, full, &corev1.PersistentVolumeClaim{ObjectMeta: meta})
}

// TestSlimConfigMap checks that the cache drops the data of config
// ConfigMaps only: Steward reads back the data of its other ConfigMaps
// (ZooKeeper's members), and of a ConfigMap that lost its labels.
func TestSlimConfigMap(t *testing.T) {
	data := map[string]string{"zoo.cfg": "tickTime=2000"}
	for _, c := range []struct {
		name     string
		labels   map[string]string
		keepData bool
	}{
		{"config", map[string]string{framework.ConfigLabel: "zk", "app.kubernetes.io/managed-by": "steward"}, false},
		{"members", map[string]string{"app.kubernetes.io/managed-by": "steward"}, true},
		{"unlabeled", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: c.labels,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "steward"}}},
				Data: data, BinaryData: map[string][]byte{"b": {1}}}
			want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: c.labels}}
			if c.keepData {
				want.Data, want.BinaryData = data, map[string][]byte{"b": {1}}
			}
			checkTransform(t, slimConfigMap, in, want)
		})
	}
}

// checkTransform checks that a cache transform turns in into want, does
// nothing more the second time, and leaves other objects alone.
func checkTransform[T any](t *testing.T, transform func(any) (any, error), in, want T) {
	t.Helper()
	got, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("transform =\n%+v\nwant\n%+v", got, want)
	}
	again, err := transform(got)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, again) {
		t.Errorf("transform twice =\n%+v\nwant\n%+v", again, want)
	}
	if other, _ := transform("another object"); other != "another object" {
		t.Errorf("transform of another object = %v, want it unchanged", other)
	}
}

// podFixture returns a pod with most of what a pod can hold, and what
// slimPod keeps of it.
func podFixture() (full, slim *corev1.Pod) {
	cmRef := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "k"}}
	secretRef := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "password"}, Key: "k"}}
	envFrom := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "all"}}}}
	configVolume := corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c-config-1"}}}}
	dataVolume := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-c-0"}}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	meta := metav1.ObjectMeta{
		Name: "c-0", Namespace: "ns", UID: "u", Labels: map[string]string{"app": "c"},
		Annotations:   map[string]string{"steward.dev/config-revision": "1"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
	}
	pod := &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i:1", Command: []string{"sh"}}},
			Containers: []corev1.Container{{
				Name: "server", Image: "s:1", Args: []string{"--x"}, EnvFrom: envFrom,
				Env:            []corev1.EnvVar{{Name: "A", Value: "a"}, {Name: "B", ValueFrom: cmRef}, {Name: "C", ValueFrom: secretRef}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2181)}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{configVolume, dataVolume,
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "gpss.steward.dev/serving"}},
			NodeName:       "node",
			Tolerations:    []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			Hostname:       "c-0",
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.7", HostIP: "10.1.0.1",
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.7"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: true, RestartCount: 2, State: running,
				Image: "s:1", ImageID: "sha256:x", LastTerminationState: running}},
		},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "c-0", Namespace: "ns", UID: "u", Labels: meta.Labels, Annotations: meta.Annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i:1"}},
			Containers:     []corev1.Container{{Name: "server", Image: "s:1", EnvFrom: envFrom, Env: []corev1.EnvVar{{Name: "B", ValueFrom: cmRef}}}},
			Volumes:        []corev1.Volume{configVolume, dataVolume},
			ReadinessGates: pod.Spec.ReadinessGates,
			NodeName:       "node",
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.7", Conditions: pod.Status.Conditions,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: true, RestartCount: 2, State: running}},
		},
	}
	return pod, want
}
