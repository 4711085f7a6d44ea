package build

import (
	"fmt"
	"hash/fnv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// Components of a LogSet's children.
const (
	// ComponentLog: the log stores' StatefulSet, pods, volumes, headless
	// Service and gossip Service.
	ComponentLog = "log"
	// ComponentLogConfig: the log stores' configuration template
	// ConfigMaps.
	ComponentLogConfig = "log-config"
	// ComponentCredentials: the generated Secret of root's password.
	ComponentCredentials = "credentials"
	// ComponentLogStores: the log stores' identities ConfigMap.
	ComponentLogStores = "log-stores"
	// ComponentShared: the shared filesystem claim a LogSet makes when
	// its spec sizes it, or the BucketClaim it makes from its template.
	ComponentShared = "shared"
)

// RootPasswordSecret returns the Secret of root's password the LogSet
// generates when spec.rootPassword names none. It has no owner: under the
// Retain policy it outlives the LogSet, like the data it opens.
func RootPasswordSecret(l *mov1.LogSet, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.RootPasswordSecret(), Labels: Labels(l.Name, ComponentCredentials)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{PasswordKey: password},
	}
}

// SharedClaim returns the shared filesystem claim l makes, nil when its
// spec gives no size (the claim is the user's, or the storage is S3). It
// has no owner: the table data outlives the LogSet unless its reclaim
// policy says Delete.
func SharedClaim(l *mov1.LogSet) *corev1.PersistentVolumeClaim {
	fs := l.Spec.SharedStorage.FileSystem
	if fs == nil || fs.Size == nil {
		return nil
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: fs.ClaimName, Labels: Labels(l.Name, ComponentShared)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: fs.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: fs.Size.DeepCopy()}},
		},
	}
}

// SharedBucketClaim returns the BucketClaim l makes from
// sharedStorage.bucketClaimTemplate, nil when it has none (the claim is
// the user's, or the storage is not a claim). It has no owner: what
// becomes of it, and of its objects, once l is gone is its reclaim
// policy's to say.
func SharedBucketClaim(l *mov1.LogSet) *mov1.BucketClaim {
	s := l.Spec.SharedStorage
	if s.BucketClaimTemplate == nil || s.BucketClaim == "" {
		return nil
	}
	return &mov1.BucketClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: s.BucketClaim, Labels: Labels(l.Name, ComponentShared)},
		Spec:       *s.BucketClaimTemplate.DeepCopy(),
	}
}

// LogTemplateFile is the log stores' template in their ConfigMap.
const LogTemplateFile = "log.toml"

// HAKeeperReplicaIDBase is the first replica ID of HAKeeper's initial
// members: MatrixOne takes IDs from this range for members named in the
// configuration (its K8SIDRangeStart) and allocates others above it.
const HAKeeperReplicaIDBase = 131072

// LogStoresName names a LogSet's stores ConfigMap: the UUID each replaced
// store's pod takes on its new volume (by pod name), and, once HAKeeper has
// bootstrapped, the key identity.BootstrappedFile, after which a store on
// a new volume starts only when HAKeeper does not know its UUID. It has no
// owner: under the Retain policy it outlives the LogSet with the volumes,
// whose stores it names.
func LogStoresName(l *mov1.LogSet) string { return l.Name + "-stores" }

// StoresDir is where a log pod mounts its set's stores ConfigMap.
const StoresDir = "/etc/steward/stores"

// BootstrappedKey is the stores ConfigMap's key that says HAKeeper has
// bootstrapped (mo-agent's identity.BootstrappedFile).
const BootstrappedKey = "bootstrapped"

// LogStores returns the stores ConfigMap with data.
func LogStores(l *mov1.LogSet, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: LogStoresName(l), Labels: Labels(l.Name, ComponentLogStores)},
		Data:       data,
	}
}

// ReplacementStoreID is the UUID of the generation-th store to run in pod
// (the first, generation 0, is wire.StoreID of the pod's name).
func ReplacementStoreID(l *mov1.LogSet, pod string, generation int) string {
	if generation == 0 {
		return wire.StoreID(l.Namespace, pod)
	}
	return wire.StoreID(l.Namespace, fmt.Sprintf("%s#%d", pod, generation))
}

// LogHeadlessName names a LogSet's headless Service.
func LogHeadlessName(l *mov1.LogSet) string { return l.Name + "-headless" }

// LogGossipName names a LogSet's gossip Service (LogGossipService).
func LogGossipName(l *mov1.LogSet) string { return GossipServiceName(l.Name) }

// GossipServiceName is the gossip Service's name of the LogSet named
// logSet.
func GossipServiceName(logSet string) string { return logSet + "-gossip" }

// LogGossipSeed is the stores' one gossip seed: the gossip Service's name.
//
// mo-service resolves its seeds once, at start (cmd/mo-service's
// resolveGossipSeedAddresses in 1.2.4), and keeps the IP for good. A pod's
// own name, as a seed, resolves to its previous pod's IP while the cluster
// DNS has not caught up with a pod re-created a moment before (every store
// of a set re-created at once, as after the set was deleted and
// re-created): the store then joins no one, for as long as it runs, and
// with every store alone no shard elects a leader (seen in CI: three stores
// seeding on a replaced pod's old IP for five minutes). A name resolving
// to two IPs, an old pod's and the new one's, is refused as a bad config.
// A Service's ClusterIP is the same for its life, whichever pods are
// behind it: a store that joins itself through it (the Service picks any
// store) tries again every half second until it has met another, and the
// members then know each other by their own, re-resolved, host names.
func LogGossipSeed(l *mov1.LogSet) string {
	return fmt.Sprintf("%s.%s.svc:%d", LogGossipName(l), l.Namespace, LogGossipPort)
}

// LogPodName is the name of the log store of the given ordinal.
func LogPodName(l *mov1.LogSet, ordinal int) string { return fmt.Sprintf("%s-%d", l.Name, ordinal) }

// logHost is a log pod's DNS name (a template when pod is "${POD_NAME}").
func logHost(l *mov1.LogSet, pod string) string {
	return fmt.Sprintf("%s.%s.%s.svc", pod, LogHeadlessName(l), l.Namespace)
}

// LogServiceAddresses are the stores' service addresses (host:port), where
// every MatrixOne store reaches HAKeeper.
func LogServiceAddresses(l *mov1.LogSet) []string { return logAddresses(l, LogServicePort) }

func logAddresses(l *mov1.LogSet, port int) []string {
	out := make([]string, 0, l.Spec.Replicas)
	for i := range int(l.Spec.Replicas) {
		out = append(out, fmt.Sprintf("%s:%d", logHost(l, LogPodName(l, i)), port))
	}
	return out
}

// LogBootstrap is HAKeeper's bootstrap of l, decided from its namespace,
// name and immutable spec alone, so that it is the same on every start, on
// every pass and after the set is deleted and re-created under its name
// (with its volumes retained): the deployment id is the FNV-1a hash of
// "<namespace>/<name>" (31 bits: MatrixOne reads it as an integer), and
// the initial members are the first shardReplicas stores, with replica IDs
// from HAKeeperReplicaIDBase.
func LogBootstrap(l *mov1.LogSet) mov1.LogBootstrap {
	h := fnv.New32a()
	h.Write([]byte(l.Namespace + "/" + l.Name))
	b := mov1.LogBootstrap{DeploymentID: int64(h.Sum32()&0x7fffffff) + 1}
	for i := range int(l.Spec.ShardReplicas) {
		b.InitialMembers = append(b.InitialMembers,
			fmt.Sprintf("%d:%s", HAKeeperReplicaIDBase+i, wire.StoreID(l.Namespace, LogPodName(l, i))))
	}
	return b
}

// LogConfig returns the log stores' configuration template with HAKeeper's
// bootstrap b: the user's TOML under the operator's keys (Render), the
// caches sized from the pods' memory limit.
func LogConfig(l *mov1.LogSet, b mov1.LogBootstrap) (string, error) {
	return Render(Template{
		Role:     RoleLog,
		Host:     logHost(l, "${POD_NAME}"),
		HAKeeper: LogServiceAddresses(l),
		Shared:   Shared(l.Spec.SharedStorage),
		Memory:   MemoryFor(RoleLog, MemoryLimit(l.Spec.Resources)),
		Log: &LogTemplate{
			DeploymentID:   uint64(b.DeploymentID),
			GossipSeeds:    []string{LogGossipSeed(l)},
			Shards:         int(l.Spec.LogShards),
			Replicas:       int(l.Spec.ShardReplicas),
			InitialMembers: b.InitialMembers,
			Restore:        l.Spec.RestoreFrom != nil,
		},
		User: l.Spec.Config,
	})
}

func logPorts() []corev1.ContainerPort {
	return []corev1.ContainerPort{
		standard.ContainerPort(PortNameRaft, LogRaftPort),
		standard.ContainerPort(PortNameLog, LogServicePort),
		standard.ContainerPort(PortNameGossip, LogGossipPort),
		standard.ContainerPort(PortNameMetrics, MetricsPort),
	}
}

// LogHeadlessService returns the log stores' headless Service.
func LogHeadlessService(l *mov1.LogSet) *corev1.Service {
	return headlessService(l.Namespace, LogHeadlessName(l), l.Name, ComponentLog, logPorts())
}

// LogGossipService returns the Service of the stores' gossip port that
// LogGossipSeed names: a ClusterIP (stable, unlike the pods' IPs) that
// publishes stores not ready yet, as the headless Service does, since the
// stores meet before any is ready.
func LogGossipService(l *mov1.LogSet) *corev1.Service {
	return notReadyService(l.Namespace, LogGossipName(l), l.Name, ComponentLog, "",
		[]corev1.ContainerPort{standard.ContainerPort(PortNameGossip, LogGossipPort)})
}

// LogStatefulSet returns the log stores' StatefulSet, running the template
// in configMap.
//
//   - OnDelete updates: the controller restarts the stores one at a time,
//     the next only when HAKeeper runs and every shard has a leader;
//   - Parallel pod management: the initial members bootstrap HAKeeper
//     together, and a store that does not start must not hold the others;
//   - a volume per store, kept for life with the store's identity;
//   - the probe sidecar serves HAKeeper's view to the controller;
//   - mo-agent records the store's UUID on its volume and reads a new
//     volume's from the stores ConfigMap (LogStoresName), mounted optional
//     and out of the template's hash: the operator changes it to replace a
//     store without restarting the others.
func LogStatefulSet(l *mov1.LogSet, configMap string) *appsv1.StatefulSet {
	probe := corev1.Container{
		Name:            ProbeContainerName,
		Image:           l.Spec.Image,
		ImagePullPolicy: l.Spec.ImagePullPolicy,
		Args: []string{"probe", "--listen", fmt.Sprintf(":%d", ProbePort),
			"--hakeeper", strings.Join(LogServiceAddresses(l), ",")},
		Ports: []corev1.ContainerPort{standard.ContainerPort(PortNameProbe, ProbePort)},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: probeMemory},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: probeMemory},
		},
		SecurityContext:          standard.RestrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name, Labels: Labels(l.Name, ComponentLog)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(l.Spec.Replicas),
			ServiceName:         LogHeadlessName(l),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: Selector(l.Name, ComponentLog)},
			Template: podTemplate(podSet{
				instance: l.Name, component: ComponentLog,
				spec: &l.Spec.PodSetSpec, shared: l.Spec.SharedStorage,
				configMap: configMap, file: LogTemplateFile,
				ports: logPorts(), readyPort: PortNameLog,
				sidecars: []corev1.Container{probe},
				runFlags: []string{"--volume", DataDir, "--stores", StoresDir,
					"--hakeeper", strings.Join(LogServiceAddresses(l), ",")},
				volumes: []corev1.Volume{{Name: StoresVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: LogStoresName(l)}, Optional: ptr.To(true)}}}},
				mounts: []corev1.VolumeMount{{Name: StoresVolume, MountPath: StoresDir, ReadOnly: true}},
			}),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{dataClaim(l.Spec.Storage)},
		},
	}
}
