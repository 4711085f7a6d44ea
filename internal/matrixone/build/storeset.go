package build

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// Components of the TN's, CNs' and proxies' children, and their
// configuration ConfigMaps' (the component followed by "-config").
const (
	ComponentTN    = "tn"
	ComponentCN    = "cn"
	ComponentProxy = "proxy"
)

// EnvDefaultPassword is the environment variable MatrixOne takes root's
// password from when it bootstraps the catalog; PasswordKey is its key in
// the LogSet's rootPassword Secret.
const (
	EnvDefaultPassword = "DEFAULT_PASSWORD"
	PasswordKey        = "password"
)

// StoreSet is a TNSet, CNSet or ProxySet as its builders take it: what
// the three kinds share, read from each kind's spec by its controller.
type StoreSet struct {
	Namespace, Name string
	Role            Role
	Replicas        int32
	Pods            *mov1.PodSetSpec
	// Storage is the stores' volume; nil gives each pod an emptyDir (the
	// proxy keeps nothing).
	Storage *commonv1.StorageSpec
	// Log is the LogSet the stores join: HAKeeper's addresses (from its
	// status) and the shared storage (from its spec).
	Log *mov1.LogSet
	// ProxyEnabled: CNs whose clients come through a proxy.
	ProxyEnabled bool
	// ServiceType is the SQL Service's type (CN and proxy).
	ServiceType corev1.ServiceType
	// CNLabels are the labels HAKeeper gives each CN (CN only); not
	// rendered into any object.
	CNLabels []mov1.CNLabel
}

// Component is the set's children's component label.
func (s StoreSet) Component() string {
	switch s.Role {
	case RoleTN:
		return ComponentTN
	case RoleCN:
		return ComponentCN
	}
	return ComponentProxy
}

// ConfigComponent is the component of the set's configuration ConfigMaps.
func (s StoreSet) ConfigComponent() string { return s.Component() + "-config" }

// TemplateFile is the set's template in its ConfigMap.
func (s StoreSet) TemplateFile() string { return s.Component() + ".toml" }

// HeadlessName names the set's headless Service.
func (s StoreSet) HeadlessName() string { return s.Name + "-headless" }

// PodName is the name of the store of the given ordinal.
func (s StoreSet) PodName(ordinal int) string { return fmt.Sprintf("%s-%d", s.Name, ordinal) }

// ServesSQL reports whether the set's clients connect to it (CN, proxy).
func (s StoreSet) ServesSQL() bool { return s.Role == RoleCN || s.Role == RoleProxy }

// SQLAddress is the SQL Service's address in the cluster.
func (s StoreSet) SQLAddress() string {
	return fmt.Sprintf("%s.%s.svc:%d", s.Name, s.Namespace, SQLPort)
}

// Config returns the stores' configuration template (Render): HAKeeper's
// addresses from the LogSet's status, its shared storage, the caches sized
// from the pods' memory limit, and the user's TOML.
func (s StoreSet) Config() (string, error) {
	t := Template{
		Role:         s.Role,
		HAKeeper:     s.Log.Status.ServiceAddresses,
		Shared:       Shared(s.Log.Spec.SharedStorage),
		Memory:       MemoryFor(s.Role, MemoryLimit(s.Pods.Resources)),
		ProxyEnabled: s.ProxyEnabled,
		User:         s.Pods.Config,
	}
	switch s.Role {
	case RoleTN:
		t.Host = fmt.Sprintf("%s.%s.%s.svc", "${POD_NAME}", s.HeadlessName(), s.Namespace)
	case RoleCN:
		// HAKeeper hands CNs' addresses to the proxies and other CNs; a
		// pod's IP needs no DNS.
		t.Host = "${POD_IP}"
	}
	if len(t.HAKeeper) == 0 {
		return "", fmt.Errorf("LogSet %s publishes no service addresses yet", s.Log.Name)
	}
	return Render(t)
}

// ports are the stores' container ports, the readiness probe's first,
// and their headless Service's.
func (s StoreSet) ports() []corev1.ContainerPort {
	metrics := standard.ContainerPort(PortNameMetrics, MetricsPort)
	switch s.Role {
	case RoleTN:
		return []corev1.ContainerPort{standard.ContainerPort(PortNameService, TNPortBase), metrics}
	case RoleCN:
		return []corev1.ContainerPort{standard.ContainerPort(PortNameSQL, SQLPort), standard.ContainerPort(PortNameService, CNPortBase), metrics}
	}
	return []corev1.ContainerPort{standard.ContainerPort(PortNameSQL, SQLPort), metrics}
}

// HeadlessService returns the set's headless Service.
func (s StoreSet) HeadlessService() *corev1.Service {
	return headlessService(s.Namespace, s.HeadlessName(), s.Name, s.Component(), s.ports())
}

// SQLService returns the Service clients connect to (CN, proxy), of
// ServiceType.
func (s StoreSet) SQLService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: Labels(s.Name, s.Component())},
		Spec: corev1.ServiceSpec{
			Type:     s.ServiceType,
			Selector: Selector(s.Name, s.Component()),
			Ports: []corev1.ServicePort{{Name: PortNameSQL, Port: SQLPort, TargetPort: intstr.FromString(PortNameSQL),
				Protocol: corev1.ProtocolTCP}},
		},
	}
}

// StatefulSet returns the stores' StatefulSet, running the template in
// configMap: OnDelete updates (the controller restarts the stores one at a
// time), Parallel pod management; a TN is ready when its service port
// accepts, a CN or proxy when a client completes a MySQL handshake and a
// statement on its SQL port (SQLReady).
func (s StoreSet) StatefulSet(configMap string) *appsv1.StatefulSet {
	ports := s.ports()
	p := podSet{
		instance: s.Name, component: s.Component(), spec: s.Pods, shared: s.Log.Spec.SharedStorage,
		configMap: configMap, file: s.TemplateFile(), ports: ports, readyPort: ports[0].Name,
	}
	if s.ServesSQL() {
		// Ready when a client completes a handshake and a statement.
		p.rootPassword = s.Log.RootPasswordSecret()
	}
	tmpl := podTemplate(p)
	if s.Role == RoleCN {
		// The CN that bootstraps the catalog sets root's password from
		// it; later starts ignore it.
		c := &tmpl.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: EnvDefaultPassword, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Log.RootPasswordSecret()}, Key: PasswordKey}}})
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: Labels(s.Name, s.Component())},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(s.Replicas),
			ServiceName:         s.HeadlessName(),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: Selector(s.Name, s.Component())},
			Template:            tmpl,
		},
	}
	if s.Storage != nil {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{dataClaim(*s.Storage)}
	} else {
		sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes,
			corev1.Volume{Name: DataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	return sts
}
