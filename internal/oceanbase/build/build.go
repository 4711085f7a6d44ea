package build

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// App and PartOf are the app.kubernetes.io/name and part-of of every
// child; the controller registers with the same.
const (
	App    = "oceanbase"
	PartOf = "oceanbase"
)

// Components, the app.kubernetes.io/component of the children.
const (
	// ComponentObserver: the zones' StatefulSets, their pods and volumes.
	ComponentObserver = "observer"
	// ComponentServer: each server's own Service, whose IP is the
	// server's address in OceanBase.
	ComponentServer = "server"
	// ComponentHeadless: the observers' headless Service.
	ComponentHeadless = "headless"
	// ComponentClient: the Service clients connect to.
	ComponentClient = "client"
	// ComponentCredentials: the generated password Secrets.
	ComponentCredentials = "credentials"
)

// ZoneLabel on the observers' pods and Services names their zone.
const ZoneLabel = "oceanbase.steward.dev/zone"

// Ports and paths of an observer (fixed by OceanBase).
const (
	SQLPort  int32 = 2881
	RPCPort  int32 = 2882
	StoreDir       = "/home/admin/oceanbase/store"
	// ContainerName is the observer's container.
	ContainerName = "observer"
	// DataVolume is the observers' volume claim template.
	DataVolume = "store"
)

// DefaultClusterDomain is the cluster's DNS domain unless the controller is
// told another.
const DefaultClusterDomain = "cluster.local"

// MaxStatefulSetName is the longest name of a zone's StatefulSet: its
// pods' controller-revision-hash label is the name, a dash and a hash of
// up to 10 characters, and a label value has at most 63.
const MaxStatefulSetName = 52

// StatefulSetName names a zone's StatefulSet.
func StatefulSetName(c *obv1.OBCluster, zone string) string { return c.Name + "-" + zone }

// PodName names the observer of zone with ordinal; its Service has the
// same name.
func PodName(c *obv1.OBCluster, zone string, ordinal int) string {
	return fmt.Sprintf("%s-%d", StatefulSetName(c, zone), ordinal)
}

// HeadlessServiceName names the observers' headless Service.
func HeadlessServiceName(c *obv1.OBCluster) string { return c.Name + "-observers" }

// ClientServiceName names the Service clients connect to.
func ClientServiceName(c *obv1.OBCluster) string { return c.Name }

// Labels returns the standard labels of a child of component.
func Labels(c *obv1.OBCluster, component string) map[string]string {
	return standard.Labels(App, c.Name, component, PartOf)
}

// Selector returns the labels selecting component's pods.
func Selector(c *obv1.OBCluster, component string) map[string]string {
	return standard.Selector(App, c.Name, component)
}

func zoneSelector(c *obv1.OBCluster, zone string) map[string]string {
	return standard.Merge(Selector(c, ComponentObserver), map[string]string{ZoneLabel: zone})
}

func meta(c *obv1.OBCluster, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: Labels(c, component)}
}

// ServerService is the Service of one observer: a ClusterIP that outlives
// the pod, so the server keeps its address in OceanBase (ip:2882) when its
// pod is re-created (OceanBase's "service mode"). It publishes the pod
// before it is ready: the observer must reach its peers to join.
func ServerService(c *obv1.OBCluster, zone string, ordinal int) *corev1.Service {
	name := PodName(c, zone, ordinal)
	m := meta(c, name, ComponentServer)
	m.Labels = standard.Merge(m.Labels, map[string]string{ZoneLabel: zone})
	return &corev1.Service{
		ObjectMeta: m,
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			Selector:                 map[string]string{"statefulset.kubernetes.io/pod-name": name},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{servicePort("sql", SQLPort), servicePort("rpc", RPCPort)},
		},
	}
}

// HeadlessService gives the observers' pods stable DNS names.
func HeadlessService(c *obv1.OBCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(c, HeadlessServiceName(c), ComponentHeadless),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 Selector(c, ComponentObserver),
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{servicePort("sql", SQLPort), servicePort("rpc", RPCPort)},
		},
	}
}

// ClientService balances MySQL clients over the ready observers.
func ClientService(c *obv1.OBCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(c, ClientServiceName(c), ComponentClient),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: Selector(c, ComponentObserver),
			Ports:    []corev1.ServicePort{servicePort("sql", SQLPort)},
		},
	}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromString(name)}
}

// StatefulSet returns zone's StatefulSet with replicas observers.
//
//   - OnDelete updates: an upgrade is the controller's, zone by zone.
//   - Parallel pod management: observers start empty and wait for the
//     bootstrap or ADD SERVER; none waits for another.
//   - The pod is ready when the SQL port accepts connections, which an
//     observer does before it is bootstrapped (the controller needs it to
//     bootstrap); whether the server serves is OceanBase's answer, read by
//     the controller.
func StatefulSet(c *obv1.OBCluster, zone obv1.OBZoneSpec, replicas int32, clusterDomain string) *appsv1.StatefulSet {
	name := StatefulSetName(c, zone.Name)
	m := meta(c, name, ComponentObserver)
	m.Labels = standard.Merge(m.Labels, map[string]string{ZoneLabel: zone.Name})
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: m.Labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *c.Spec.Storage.Size,
			}},
		},
	}
	return &appsv1.StatefulSet{
		ObjectMeta: m,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			ServiceName:          HeadlessServiceName(c),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:             &metav1.LabelSelector{MatchLabels: zoneSelector(c, zone.Name)},
			Template:             podTemplate(c, zone, clusterDomain),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			// The controller deletes a departed server's claim itself, once
			// OceanBase has let the server go (docs/oceanbase.md).
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

func podTemplate(c *obv1.OBCluster, zone obv1.OBZoneSpec, clusterDomain string) corev1.PodTemplateSpec {
	labels := standard.Merge(Labels(c, ComponentObserver), map[string]string{ZoneLabel: zone.Name})
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Containers:                    []corev1.Container{container(c, zone.Name, clusterDomain)},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	placement := c.Spec.Placement
	if zone.Placement != nil {
		placement = *zone.Placement
	}
	standard.ApplyPlacement(&tmpl.Spec, placement, nil)
	spec, err := json.Marshal(tmpl.Spec)
	if err != nil {
		panic(fmt.Sprintf("a pod spec does not marshal: %v", err)) // a PodSpec always does
	}
	tmpl.Annotations = map[string]string{TemplateHashAnnotation: standard.ConfigHash(map[string]string{"spec": string(spec)})}
	return tmpl
}

// TemplateHashAnnotation is on the observers' pod template, and so on their
// pods: a hash of the pod spec Steward asked for. A pod whose hash differs
// from its StatefulSet's template runs an old spec (an image, resources or
// placement changed since it was created), and the upgrade flow re-creates
// it zone by zone: the StatefulSets are OnDelete.
const TemplateHashAnnotation = "oceanbase.steward.dev/template-hash"

// PodTemplateHash is the TemplateHashAnnotation of zone's pod template.
func PodTemplateHash(c *obv1.OBCluster, zone obv1.OBZoneSpec, clusterDomain string) string {
	return podTemplate(c, zone, clusterDomain).Annotations[TemplateHashAnnotation]
}

// Args are the observer's start arguments (docs/oceanbase.md, the image
// contract): the observer's own flags, with --advertise-host naming the
// DNS name of the server's Service, which the image's entrypoint resolves
// to the address it passes to the observer as -I.
func Args(c *obv1.OBCluster, zone, clusterDomain string) []string {
	host := fmt.Sprintf("$(POD_NAME).%s.svc.%s", c.Namespace, clusterDomain)
	args := []string{
		"--nodaemon", "--appname", c.Spec.ClusterName, "--cluster_id", strconv.FormatInt(c.Spec.ClusterID, 10),
		"--zone", zone, "--advertise-host", host,
		"-p", strconv.Itoa(int(SQLPort)), "-P", strconv.Itoa(int(RPCPort)), "-d", StoreDir,
	}
	if opts := StartOptions(c); len(opts) > 0 {
		args = append(args, "-o", strings.Join(opts, ","))
	}
	return args
}

// StartOptions are the observer's -o options derived from its resources:
// memory_limit from the memory limit, cpu_count from the CPU limit
// (rounded up), so that OceanBase does not size itself from the node.
func StartOptions(c *obv1.OBCluster) []string {
	var out []string
	limits := c.Spec.Resources.Limits
	if m, ok := limits[corev1.ResourceMemory]; ok {
		out = append(out, fmt.Sprintf("memory_limit=%dM", m.Value()/(1<<20)))
	}
	if cpu, ok := limits[corev1.ResourceCPU]; ok {
		out = append(out, fmt.Sprintf("cpu_count=%d", int64(math.Ceil(float64(cpu.MilliValue())/1000))))
	}
	sort.Strings(out)
	return out
}

func container(c *obv1.OBCluster, zone, clusterDomain string) corev1.Container {
	return corev1.Container{
		Name:            ContainerName,
		Image:           c.Spec.Image,
		ImagePullPolicy: c.Spec.ImagePullPolicy,
		Args:            Args(c, zone, clusterDomain),
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Ports:        []corev1.ContainerPort{standard.ContainerPort("sql", SQLPort), standard.ContainerPort("rpc", RPCPort)},
		Resources:    c.Spec.Resources,
		VolumeMounts: []corev1.VolumeMount{{Name: DataVolume, MountPath: StoreDir}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("sql")}},
			PeriodSeconds:    2,
			FailureThreshold: 3,
		},
		SecurityContext: observerSecurity(),
	}
}

// observerSecurity is the restricted context with a writable root: an
// observer writes its logs and run files under its home, beside the store.
func observerSecurity() *corev1.SecurityContext {
	sc := standard.RestrictedContainer()
	sc.ReadOnlyRootFilesystem = ptr.To(false)
	return sc
}

// PasswordSecret is a generated credential Secret (key "password").
func PasswordSecret(c *obv1.OBCluster, name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: meta(c, name, ComponentCredentials),
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"password": password},
	}
}
