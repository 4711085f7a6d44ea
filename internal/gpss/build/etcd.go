package build

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// EtcdDataDir is where the managed etcd's volume is mounted.
const EtcdDataDir = "/var/lib/etcd"

// EtcdDataVolume names the managed etcd's volume claim template: claims are
// data-<etcd name>-<ordinal>.
const EtcdDataVolume = "data"

// EtcdContainerName is the managed etcd's container.
const EtcdContainerName = "etcd"

// EtcdMemberAddress is the stable DNS name of the managed etcd's member of
// the given ordinal.
func EtcdMemberAddress(g *gpssv1.GpssCluster, ordinal int, domain string) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s", EtcdName(g), ordinal, EtcdName(g), g.Namespace, orDefault(domain))
}

// ManagesEtcd reports whether the operator runs g's etcd (no endpoints
// given).
func ManagesEtcd(g *gpssv1.GpssCluster) bool { return len(g.Spec.Etcd.Endpoints) == 0 }

// EtcdService is the managed etcd's headless Service: the members' stable
// names, published before they are ready, since members must reach each
// other to become ready.
func EtcdService(g *gpssv1.GpssCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(g, EtcdName(g), ComponentEtcd),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 Selector(g, ComponentEtcd),
			Ports: []corev1.ServicePort{
				servicePort(PortNameEtcdClient, EtcdClientPort),
				servicePort(PortNameEtcdPeer, EtcdPeerPort),
			},
		},
	}
}

// EtcdStatefulSet is the managed etcd (of a defaulted cluster, as every
// builder here takes: gpssv1.Default): the upstream etcd binary, one
// member per pod with a volume each, the initial cluster named by the
// members' stable addresses. It is a static cluster (its size is
// immutable), so a re-created member rejoins with its data.
func EtcdStatefulSet(g *gpssv1.GpssCluster, domain string) *appsv1.StatefulSet {
	m := g.Spec.Etcd.Managed
	peers := make([]string, m.Replicas)
	for i := range peers {
		peers[i] = fmt.Sprintf("%s-%d=http://%s:%d", EtcdName(g), i, EtcdMemberAddress(g, i, domain), EtcdPeerPort)
	}
	// $(POD_NAME) is expanded by the kubelet from the env below.
	self := fmt.Sprintf("$(POD_NAME).%s.%s.svc.%s", EtcdName(g), g.Namespace, orDefault(domain))
	args := []string{
		"--name=$(POD_NAME)",
		"--data-dir=" + EtcdDataDir + "/data",
		fmt.Sprintf("--listen-client-urls=http://0.0.0.0:%d", EtcdClientPort),
		fmt.Sprintf("--advertise-client-urls=http://%s:%d", self, EtcdClientPort),
		fmt.Sprintf("--listen-peer-urls=http://0.0.0.0:%d", EtcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://%s:%d", self, EtcdPeerPort),
		"--initial-cluster=" + strings.Join(peers, ","),
		"--initial-cluster-state=new",
		"--initial-cluster-token=" + g.Namespace + "-" + EtcdName(g),
		"--log-level=warn",
	}
	size := resource.MustParse(gpssv1.DefaultEtcdStorageSize)
	if m.Storage.Size != nil {
		size = m.Storage.Size.DeepCopy()
	}
	var class *string
	if c := m.Storage.StorageClassName; c != nil {
		class = ptr.To(*c)
	}
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(PortNameEtcdClient)}},
			PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 5,
		}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: meta(g, EtcdName(g), ComponentEtcd),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(m.Replicas),
			ServiceName:         EtcdName(g),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: Selector(g, ComponentEtcd)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(g, ComponentEtcd)},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532),
						FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
						SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Affinity: spreadOverNodes(g, ComponentEtcd),
					Containers: []corev1.Container{{
						Name:  EtcdContainerName,
						Image: m.Image,
						Args:  args,
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						Ports: []corev1.ContainerPort{
							standard.ContainerPort(PortNameEtcdClient, EtcdClientPort),
							standard.ContainerPort(PortNameEtcdPeer, EtcdPeerPort),
						},
						VolumeMounts:             []corev1.VolumeMount{{Name: EtcdDataVolume, MountPath: EtcdDataDir}},
						ReadinessProbe:           probe("/readyz", 2, 3),
						LivenessProbe:            probe("/livez", 10, 6),
						StartupProbe:             probe("/livez", 1, 120),
						SecurityContext:          standard.RestrictedContainer(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: EtcdDataVolume, Labels: Labels(g, ComponentEtcd)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}},
			// The controller deletes the claims itself, by the reclaim
			// policy, when the cluster is deleted.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}
