package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestSlimPod checks what the cache keeps of a pod: what Steward reads
// (labels, annotations, images, ConfigMap references, readiness gates, IP,
// conditions, container states), and nothing of the rest; twice is once.
func TestSlimPod(t *testing.T) {
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
	got, err := slimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("slimPod =\n%+v\nwant\n%+v", got, want)
	}
	again, err := slimPod(got)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, again) {
		t.Errorf("slimPod twice =\n%+v\nwant\n%+v", again, want)
	}
	if other, _ := slimPod("not a pod"); other != "not a pod" {
		t.Errorf("slimPod of another object = %v, want it unchanged", other)
	}
}
