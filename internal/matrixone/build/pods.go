package build

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// App and PartOf are the app.kubernetes.io/name and part-of of every
// child of a MatrixOne set; the controllers register with the same.
const (
	App    = "matrixone"
	PartOf = "matrixone"
)

// Containers, volumes and paths of a MatrixOne pod.
const (
	// ContainerName is the container running mo-service (through
	// mo-agent run).
	ContainerName = "mo"
	// ProbeContainerName is the log pods' mo-agent probe, which serves
	// HAKeeper's view.
	ProbeContainerName = "probe"
	// ProbePort is the probe's HTTP port.
	ProbePort = 7070

	ConfigVolume = "config"
	DataVolume   = "data"
	SharedVolume = "shared"
	TmpVolume    = "tmp"
	StoresVolume = "stores"
	// RootPasswordVolume is the LogSet's root password Secret, mounted
	// in CN and proxy pods for their readiness probe at RootPasswordDir.
	RootPasswordVolume = "root-password"
	// ConfigDir is where a set's configuration template is mounted.
	ConfigDir = "/etc/matrixone"
	// RootPasswordDir holds root's password (file PasswordKey) in CN and
	// proxy pods: a Secret volume, so a password written to the Secret
	// reaches the probe without a restart.
	RootPasswordDir = "/etc/matrixone-root"
	// S3CAVolume is the S3 CA Secret's key (sharedStorage.s3.caSecret),
	// mounted read-only in every pod as S3CAFile, which the file
	// services' cert-files list.
	S3CAVolume = "s3-ca"
	S3CADir    = "/etc/matrixone-s3-ca"
	S3CAFile   = S3CADir + "/ca.crt"
)

// SQLReady is the image's readiness probe of CN and proxy pods
// (tools/mo-agent/cmd/sql-ready): a MySQL handshake as root on the pod's
// SQL port and select 1, within SQLReadyTimeout; a handshake that ends in
// a refused login (error 1045) counts too, since MatrixOne refuses only
// after reading its catalog.
const (
	SQLReady        = "/sql-ready"
	SQLReadyTimeout = 2 * time.Second
)

// Port names on the containers and Services.
const (
	PortNameRaft    = "raft"
	PortNameLog     = "logservice"
	PortNameGossip  = "gossip"
	PortNameProbe   = "probe"
	PortNameService = "service"
	PortNameSQL     = "sql"
	PortNameMetrics = "metrics"
)

// probeMemory is the probe sidecar's memory request and limit (it uses
// about 55 MiB).
var probeMemory = resource.MustParse("96Mi")

// podUser is the image's user (images/matrixone/README.md); the volumes
// are made its group's.
const podUser = 65532

// The keys of an S3 credentials Secret, given to mo-service as the AWS
// SDK's environment variables of the same names.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// podSecurity is the security context of every pod of the image: its
// user, and the volumes made its group's.
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](podUser), RunAsGroup: ptr.To[int64](podUser),
		FSGroup:        ptr.To[int64](podUser),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// s3CredentialsEnv gives the keys of the S3 credentials Secret named
// secret as the AWS SDK's environment variables; none when secret is
// empty (the pod's own identity).
func s3CredentialsEnv(secret string) []corev1.EnvVar {
	if secret == "" {
		return nil
	}
	var env []corev1.EnvVar
	for _, key := range []string{EnvAccessKeyID, EnvSecretAccessKey} {
		env = append(env, corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
	}
	return env
}

// LabelBucketClaim is on every pod whose shared storage is a BucketClaim,
// with the claim's name: the claim's controller deletes the claim's
// objects (reclaimPolicy Delete) only once no pod carries it, so that
// nothing is still writing there.
const LabelBucketClaim = "matrixone.steward.dev/bucket-claim"

// Labels are the standard labels of the children of the set named
// instance playing component.
func Labels(instance, component string) map[string]string {
	return standard.Labels(App, instance, component, PartOf)
}

// Selector selects the children of the set named instance playing
// component.
func Selector(instance, component string) map[string]string {
	return standard.Selector(App, instance, component)
}

// MemoryLimit is the pod's memory limit in bytes (its request when it
// sets no limit); 0 when it sets neither.
func MemoryLimit(r corev1.ResourceRequirements) int64 {
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	if q, ok := r.Requests[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}

// Shared is the shared storage of a set's spec, as the templates take it:
// a bucketClaim's location must have been resolved into s3 first (its
// controller does, reading the claim); unresolved, it renders nothing.
func Shared(s mov1.SharedStorage) SharedStorage {
	if s.S3 == nil {
		return SharedStorage{}
	}
	out := &S3{Endpoint: s.S3.Endpoint, Bucket: s.S3.Bucket, KeyPrefix: s.S3.KeyPrefix, Region: s.S3.Region, PathStyle: s.S3.PathStyle}
	if s.S3.CASecret != nil {
		out.CAFile = S3CAFile
	}
	return SharedStorage{S3: out}
}

// podSet is what a role's pod template is made of.
type podSet struct {
	// meta names the set's pods' owner and component.
	instance, component string
	spec                *mov1.PodSetSpec
	shared              mov1.SharedStorage
	// configMap holds the role's configuration template, file.
	configMap, file string
	ports           []corev1.ContainerPort
	// readyPort is the port whose accepting connections makes the pod
	// ready, unless rootPassword is set.
	readyPort string
	// rootPassword is the Secret of root's password of a pod serving SQL
	// (CN, proxy): it is ready when SQLReady completes a handshake and a
	// statement on its SQL port, as root with this password.
	rootPassword string
	// sidecars run beside mo-service.
	sidecars []corev1.Container
	// runFlags are mo-agent run's flags before the template; volumes and
	// mounts are more of the pod's volumes and mo-service's mounts.
	runFlags []string
	volumes  []corev1.Volume
	mounts   []corev1.VolumeMount
}

// podTemplate returns the pod template of a MatrixOne set: mo-agent
// renders the configuration template and execs mo-service.
//
//   - the downward API gives mo-agent the pod's name, namespace and IP
//     (and a log store's its UID);
//   - GOMEMLIMIT is four fifths of the memory limit, so Go collects before
//     the kernel kills (MatrixOne's caches are sized from the same limit);
//   - S3 credentials come from the user's Secret as the AWS SDK's variables,
//     and an S3 CA bundle from the user's Secret as a read-only file;
//   - the pod runs as the image's user, its volumes made its group's, with
//     a read-only root filesystem and /tmp an emptyDir (the rendered
//     configuration and MatrixOne's temporary files).
func podTemplate(p podSet) corev1.PodTemplateSpec {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
	}
	if p.component == ComponentLog {
		// mo-agent tells the failed store's pod from its replacement by
		// UID (wire.FailedPodKey).
		env = append(env, corev1.EnvVar{Name: wire.PodUIDEnv, ValueFrom: field("metadata.uid")})
	}
	if limit := MemoryLimit(p.spec.Resources); limit > 0 {
		env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: fmt.Sprintf("%dMiB", limit*4/5/mib)})
	}
	if s3 := p.shared.S3; s3 != nil {
		env = append(env, s3CredentialsEnv(s3.CredentialsSecret)...)
	}
	mounts := []corev1.VolumeMount{
		{Name: ConfigVolume, MountPath: ConfigDir, ReadOnly: true},
		{Name: TmpVolume, MountPath: "/tmp"},
		{Name: DataVolume, MountPath: DataDir},
	}
	volumes := []corev1.Volume{
		{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.configMap}}}},
		{Name: TmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if s3 := p.shared.S3; s3 != nil && s3.CASecret != nil {
		// Certificates are no secret: anyone in the pod may read them.
		// Not optional: a pod without the CA would fail its store's TLS.
		mounts = append(mounts, corev1.VolumeMount{Name: S3CAVolume, MountPath: S3CADir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: S3CAVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s3.CASecret.Name, Items: []corev1.KeyToPath{{Key: cmp.Or(s3.CASecret.Key, mov1.DefaultCAKey), Path: path.Base(S3CAFile)}},
			DefaultMode: ptr.To[int32](0o444),
		}}})
	}
	if fs := p.shared.FileSystem; fs != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: SharedVolume, MountPath: SharedMountPath})
		volumes = append(volumes, corev1.Volume{Name: SharedVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fs.ClaimName}}})
	}
	ready := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(p.readyPort)}},
		PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 2,
	}
	if p.rootPassword != "" {
		ready = sqlReadinessProbe()
		mounts = append(mounts, corev1.VolumeMount{Name: RootPasswordVolume, MountPath: RootPasswordDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: RootPasswordVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: p.rootPassword, Items: []corev1.KeyToPath{{Key: PasswordKey, Path: PasswordKey}},
			// The image's group (fsGroup) reads it, no one else; optional:
			// without it the probe logs in with no password, is refused,
			// and that is an answer.
			DefaultMode: ptr.To[int32](0o440), Optional: ptr.To(true),
		}}})
	}
	mounts, volumes = append(mounts, p.mounts...), append(volumes, p.volumes...)
	mo := corev1.Container{
		Name:                     ContainerName,
		Image:                    p.spec.Image,
		ImagePullPolicy:          p.spec.ImagePullPolicy,
		Args:                     slices.Concat([]string{"run"}, p.runFlags, []string{ConfigDir + "/" + p.file}),
		Env:                      env,
		Ports:                    p.ports,
		Resources:                *p.spec.Resources.DeepCopy(),
		VolumeMounts:             mounts,
		ReadinessProbe:           ready,
		SecurityContext:          standard.RestrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	labels := Labels(p.instance, p.component)
	if p.shared.BucketClaim != "" {
		labels[LabelBucketClaim] = p.shared.BucketClaim
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			// MatrixOne needs no Kubernetes API.
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			Containers:                   append([]corev1.Container{mo}, p.sidecars...),
			Volumes:                      volumes,
			SecurityContext:              podSecurity(),
			// mo-service flushes and leaves its shards' membership cleanly
			// on SIGTERM.
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	standard.ApplyPlacement(&tmpl.Spec, p.spec.PodPlacement, spreadOverNodes(p.instance, p.component))
	return tmpl
}

// sqlReadinessProbe runs SQLReady in the mo container every 2 s: ready
// when a client can complete a handshake and run a statement, not when
// the port accepts (a proxy accepted connections for about 15 s after a
// TN restart and finished no handshake). The kubelet gives it a second
// more than its own deadline; three misses in a row (about 6 s) take the
// pod out of its Services.
func sqlReadinessProbe() *corev1.Probe {
	timeout := int32(SQLReadyTimeout / time.Second)
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{SQLReady,
			"--addr", fmt.Sprintf("127.0.0.1:%d", SQLPort), "--password-file", RootPasswordDir + "/" + PasswordKey,
			"--timeout", SQLReadyTimeout.String()}}},
		PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: timeout + 1,
	}
}

// dataClaim is the volume claim template of a set's stores.
func dataClaim(s commonv1.StorageSpec) corev1.PersistentVolumeClaim {
	size := resource.MustParse(mov1.DefaultStorageSize)
	if s.Size != nil {
		size = s.Size.DeepCopy()
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: s.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}

// headlessService returns a set's headless Service: stable DNS names for
// its pods, published before they are ready, since a log store resolves its
// own name and its peers' while it starts.
func headlessService(namespace, name, instance, component string, ports []corev1.ContainerPort) *corev1.Service {
	return notReadyService(namespace, name, instance, component, corev1.ClusterIPNone, ports)
}

// notReadyService returns a Service of a set's pods, ready or not, with
// clusterIP ("" for one the API server allocates, or None: headless; both
// are of type ClusterIP, the API server's default).
func notReadyService(namespace, name, instance, component, clusterIP string, ports []corev1.ContainerPort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: Labels(instance, component)},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                clusterIP,
			PublishNotReadyAddresses: true,
			Selector:                 Selector(instance, component),
		},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort,
			TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
	}
	return svc
}

// spreadOverNodes prefers one pod of a set per node without requiring it
// (a one-node cluster still schedules them all).
func spreadOverNodes(instance, component string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: Selector(instance, component)},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}
