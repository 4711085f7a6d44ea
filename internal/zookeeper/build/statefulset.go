package build

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// The image's user and group (images/zookeeper/README.md).
const (
	UID int64 = 100
	GID int64 = 101
)

// Names of the pod's container and volumes. DataVolume is also the volume
// claim template's, so the claims are data-<name>-<ordinal>.
const (
	ContainerName = "zookeeper"
	ConfigVolume  = "config"
	DataVolume    = "data"
	TmpVolume     = "tmp"
)

// ConfigRevisionAnnotation on the pod template carries ConfigRevision, the
// hash of the zoo.cfg the pod runs with.
const ConfigRevisionAnnotation = "zookeeper.steward.dev/config-revision"

// Probe commands. The image has bash but neither nc nor curl, so they talk
// to the client port through bash's /dev/tcp. The AdminServer cannot serve
// for readiness: in 3.8 a server that does not serve answers HTTP 200 (with
// an error in the JSON), so an httpGet probe cannot tell.
//
// Each runs under coreutils' timeout, ProbeCommandTimeout: a frozen server
// (SIGSTOP, a stalled disk, a JVM in a long pause) accepts the connection
// in the kernel and never answers, and the container runtime was seen to
// let such an exec run for two minutes, whatever the probe's
// timeoutSeconds, keeping the server Ready and in the client Service.
// Timed out by itself, readiness fails within PeriodSeconds x
// FailureThreshold (10 s).
var (
	// ReadinessCommand: the server serves, i.e. srvr reports its Mode
	// (leader, follower, observer or standalone); a server without a quorum
	// answers "not currently serving requests" instead.
	ReadinessCommand = []string{"timeout", ProbeCommandTimeout, "/bin/bash", "-c",
		`exec 3<>/dev/tcp/127.0.0.1/2181 && printf srvr >&3 && grep -q '^Mode: ' <&3`}
	// LivenessCommand: the server process answers at all (ruok -> imok,
	// also while it has no quorum, so a partitioned server is not
	// restarted in a loop).
	LivenessCommand = []string{"timeout", ProbeCommandTimeout, "/bin/bash", "-c",
		`exec 3<>/dev/tcp/127.0.0.1/2181 && printf ruok >&3 && grep -q imok <&3`}
)

// ProbeCommandTimeout bounds each probe command, in timeout(1)'s syntax.
const ProbeCommandTimeout = "2s"

// JVMOptions are the servers' ZK_JVM_OPTS: the super user's digest (from
// the ZK_SUPER_DIGEST variable), and a connect timeout for election
// connections (zookeeper.cnxTimeout) of 2 s rather than 5 s. A server that
// survived lost pods may still call a peer's old address (the image keeps
// DNS answers for a second, the cluster DNS for up to its TTL); while that
// attempt hangs ZooKeeper starts no other to the same peer, so each stale
// attempt held the election back by 5 s. A connect inside a cluster takes
// milliseconds; 2 s leaves room for one lost SYN.
//
// And a leader whose voters gave up on it quits
// (zookeeper.leader.maxTimeToWaitForEpoch; default: never) instead of
// waiting out initLimit (20 s) for them. In a new ensemble a server may be
// elected by a voter that then follows another: one that cannot resolve
// the leader's name yet (the DNS has no record of its pod) and gives up in
// half a second, or one that switches to a server started a moment later
// with a higher id. The two others then form the ensemble and the first
// leader waits for voters that left; the creation benchmark saw 5 of 72
// clusters take 24-26 s that way instead of 4 s. With the limit, a
// notification from one of its voters that is looking again, 100 ms or more
// after it began to lead, makes the leader look again, and it joins the
// others. Notifications sent before the voter followed it arrive within
// tens of milliseconds, and a slow but loyal follower sends none.
const JVMOptions = "-Dzookeeper.DigestAuthenticationProvider.superDigest=$(ZK_SUPER_DIGEST)" +
	" -Dzookeeper.cnxTimeout=2000 -Dzookeeper.leader.maxTimeToWaitForEpoch=100"

// StatefulSet returns the servers' StatefulSet with replicas pods, the
// config ConfigMap configMap and the members ConfigMap mounted together at
// /conf, the super user's digest from the credentials Secret, and configRevision
// (ConfigRevision of that ConfigMap's data) on the pod template. replicas
// is the controller's, not necessarily spec.replicas: it scales the
// StatefulSet one step of a membership change at a time.
//
// Decisions:
//   - podManagementPolicy Parallel: with OrderedReady a new ensemble never
//     starts, since pod 0 is not ready (serving) until a quorum of its
//     peers runs, and those would wait for it; and an ensemble that lost a
//     majority must get all its pods back at once. Scaling order is the
//     controller's business anyway (members leave before their pods go).
//   - updateStrategy OnDelete: the controller restarts the servers one at a
//     time, followers first and the leader last, waiting for each to rejoin;
//     the StatefulSet's controller does not know who leads.
//   - persistentVolumeClaimRetentionPolicy: Retain, whenDeleted and
//     whenScaled both. The StatefulSet never deletes a volume: a
//     `kubectl delete statefulset` (which the controller repairs at once)
//     must not wipe the data under reclaim policy Delete, and a scale-in
//     must not lose a member's data before it has left the ensemble. The
//     controller deletes claims itself: a departed member's once it has
//     left (policy Delete), and all of them when the cluster is deleted
//     (policy Delete).
//   - a read-only root file system, with an emptyDir at /tmp (the JVM's
//     perf data, bash's here-documents); zk-run writes only to /data.
//   - without spec.affinity, a preferred anti-affinity spreads the servers
//     over nodes without making a single-node cluster unschedulable.
func StatefulSet(zk *zkv1.ZookeeperCluster, replicas int32, configMap, configRevision string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      zk.Name,
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentServer),
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         HeadlessServiceName(zk),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: Selector(zk, ComponentServer)},
			Template:            podTemplate(zk, configMap, configRevision),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{
				volumeClaimTemplate(zk),
			},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

func podTemplate(zk *zkv1.ZookeeperCluster, configMap, configRevision string) corev1.PodTemplateSpec {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      Labels(zk, ComponentServer),
			Annotations: map[string]string{ConfigRevisionAnnotation: configRevision},
		},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{container(zk)},
			Volumes:                      volumes(zk, configMap),
			SecurityContext:              podSecurityContext(),
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
		},
	}
	standard.ApplyPlacement(&tmpl.Spec, zk.Spec.PodPlacement, spreadOverNodes(zk))
	return tmpl
}

func container(zk *zkv1.ZookeeperCluster) corev1.Container {
	s := &zk.Spec
	return corev1.Container{
		Name:            ContainerName,
		Image:           s.Image,
		ImagePullPolicy: s.ImagePullPolicy,
		Env: []corev1.EnvVar{
			{Name: "ZK_HEAP", Value: s.Heap},
			{Name: "ZK_SUPER_DIGEST", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: CredentialsSecretName(zk)},
				Key:                  SuperDigestKey,
			}}},
			// The kubelet expands $(ZK_SUPER_DIGEST), defined above.
			{Name: "ZK_JVM_OPTS", Value: JVMOptions},
		},
		Ports: []corev1.ContainerPort{
			standard.ContainerPort(PortNameClient, ClientPort),
			standard.ContainerPort(PortNameQuorum, QuorumPort),
			standard.ContainerPort(PortNameElection, ElectionPort),
			standard.ContainerPort(PortNameAdmin, s.AdminPort),
		},
		Resources: *s.Resources.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: ConfigVolume, MountPath: "/conf", ReadOnly: true},
			{Name: DataVolume, MountPath: DataDir},
			{Name: TmpVolume, MountPath: "/tmp"},
		},
		// The JVM starts in seconds but may take longer on a busy node,
		// and loading a large snapshot takes longer still: up to 5 minutes
		// before liveness counts. Every second: readiness is not probed
		// before the startup probe passes, and a server that had to wait
		// for the next 5 s tick became Ready up to 5 s after it served
		// (half of healing two lost pods). It stops once it passes.
		StartupProbe: execProbe(LivenessCommand, 1, 300),
		// Generous: restart only a server that has not answered ruok for a
		// minute.
		LivenessProbe: execProbe(LivenessCommand, 15, 4),
		// Every 2 s, so that a server joins the client Service soon after
		// it serves; out of it after 5 failures, 10 s.
		ReadinessProbe:           execProbe(ReadinessCommand, 2, 5),
		SecurityContext:          standard.RestrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

func execProbe(command []string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: slices.Clone(command)}},
		PeriodSeconds:    period,
		TimeoutSeconds:   5,
		SuccessThreshold: 1,
		FailureThreshold: failures,
	}
}

// volumes are the config volume, zoo.cfg from the immutable configMap and
// zoo.cfg.dynamic from the members ConfigMap side by side in /conf, and
// /tmp.
func volumes(zk *zkv1.ZookeeperCluster, configMap string) []corev1.Volume {
	source := func(name string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
		}}
	}
	return []corev1.Volume{
		{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				source(configMap), source(MembersConfigMapName(zk)),
			}},
		}},
		{Name: TmpVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("128Mi"))},
		}},
	}
}

func podSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true),
		RunAsUser:    ptr.To(UID),
		RunAsGroup:   ptr.To(GID),
		FSGroup:      ptr.To(GID),
		// Skip the recursive chown of a large volume on every start.
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func spreadOverNodes(zk *zkv1.ZookeeperCluster) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: Selector(zk, ComponentServer)},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}

func volumeClaimTemplate(zk *zkv1.ZookeeperCluster) corev1.PersistentVolumeClaim {
	size := resource.MustParse(zkv1.DefaultStorageSize)
	if zk.Spec.Storage.Size != nil {
		size = zk.Spec.Storage.Size.DeepCopy()
	}
	var class *string
	if c := zk.Spec.Storage.StorageClassName; c != nil {
		class = ptr.To(*c)
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: DataVolume,
			// Stable labels, so that the controller finds the claims of
			// departed members.
			Labels: Selector(zk, ComponentServer),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size},
			},
		},
	}
}
