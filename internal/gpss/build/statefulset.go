package build

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// ContainerName is the GPSS container's name.
const ContainerName = "gpss"

// ConfigRevisionAnnotation on the pod template names the config ConfigMap
// the pods run with.
const ConfigRevisionAnnotation = "gpss.steward.dev/config-revision"

// ConfigVolume is the volume of gpss.json.
const ConfigVolume = "config"

// ServingCondition is the pod condition the controller sets from the
// instance's own answer (ListJobs over gRPC) and the instances' pods name
// as a readiness gate: a pod is Ready, and behind the gRPC Service, only
// while its instance answers the job API, not merely while its port
// accepts connections (an instance cut off from its etcd accepts them and
// answers nothing).
const ServingCondition corev1.PodConditionType = "gpss.steward.dev/serving"

// StatefulSet returns the instances' StatefulSet with replicas pods running
// image from the config ConfigMap configMap.
//
//   - OnDelete updates: the controller decides when each instance restarts
//     (one at a time, the next only when the one before runs its jobs
//     again), and image is what the pods it re-creates run, so a rollout
//     and a rollback are the controller's, not the StatefulSet's.
//   - Parallel pod management: instances do not depend on each other to
//     start, and a crash-looping instance must not block the others.
//   - no volumes: GPSS keeps its state (jobs, membership) in etcd.
//   - readiness is the gRPC port accepting connections (the container's
//     probe) and the instance answering ListJobs (ServingCondition, a
//     readiness gate the controller sets): GPSS documents no health RPC.
func StatefulSet(g *gpssv1.GpssCluster, replicas int32, image, configMap string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: meta(g, InstancesName(g), ComponentInstance),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         HeadlessServiceName(g),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: Selector(g, ComponentInstance)},
			Template:            podTemplate(g, image, configMap),
		},
	}
}

func podTemplate(g *gpssv1.GpssCluster, image, configMap string) corev1.PodTemplateSpec {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      Labels(g, ComponentInstance),
			Annotations: map[string]string{ConfigRevisionAnnotation: configMap},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: ServiceAccountName(g),
			// GPSS needs no Kubernetes API.
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			Containers:                   []corev1.Container{container(g, image)},
			ReadinessGates:               []corev1.PodReadinessGate{{ConditionType: ServingCondition}},
			Volumes: []corev1.Volume{{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
			}}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// A stopping instance finishes its current batch.
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	standard.ApplyPlacement(&tmpl.Spec, g.Spec.PodPlacement, spreadOverNodes(g, ComponentInstance))
	return tmpl
}

func container(g *gpssv1.GpssCluster, image string) corev1.Container {
	s := &g.Spec
	return corev1.Container{
		Name:            ContainerName,
		Image:           image,
		ImagePullPolicy: s.ImagePullPolicy,
		Args:            []string{ConfigPath},
		Ports: []corev1.ContainerPort{
			standard.ContainerPort(PortNameGRPC, s.Ports.GRPC),
			standard.ContainerPort(PortNameGpfdist, s.Ports.Gpfdist),
			standard.ContainerPort(PortNameCluster, s.Ports.Cluster),
		},
		Resources:    *s.Resources.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{{Name: ConfigVolume, MountPath: ConfigDir, ReadOnly: true}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortNameGRPC)}},
			PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 2,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortNameGRPC)}},
			PeriodSeconds: 10, FailureThreshold: 6, TimeoutSeconds: 5, InitialDelaySeconds: 10,
		},
		SecurityContext:          standard.RestrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// spreadOverNodes prefers one pod of component per node without requiring
// it (a one-node cluster still schedules them all).
func spreadOverNodes(g *gpssv1.GpssCluster, component string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: Selector(g, component)},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}
