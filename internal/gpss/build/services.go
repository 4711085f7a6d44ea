package build

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
)

// HeadlessService gives each instance a stable DNS name (the StatefulSet's
// serviceName), ready or not.
func HeadlessService(g *gpssv1.GpssCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(g, HeadlessServiceName(g), ComponentHeadless),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 Selector(g, ComponentInstance),
			Ports:                    []corev1.ServicePort{servicePort(PortNameCluster, g.Spec.Ports.Cluster)},
		},
	}
}

// GRPCService is the one Service gpsscli and the Batch Data API's clients
// connect to: any ready instance answers for the whole cluster.
func GRPCService(g *gpssv1.GpssCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(g, GRPCServiceName(g), ComponentGRPC),
		Spec: corev1.ServiceSpec{
			Selector: Selector(g, ComponentInstance),
			Ports:    []corev1.ServicePort{servicePort(PortNameGRPC, g.Spec.Ports.GRPC)},
		},
	}
}

// GpfdistService is the Service of one instance's gpfdist port, selecting
// that pod alone: Greenplum's segments must reach the instance that runs
// their job. It publishes the pod before it is ready, so that its address
// does not come and go with the instance's readiness while a segment
// reads.
func GpfdistService(g *gpssv1.GpssCluster, ordinal int) *corev1.Service {
	s := g.Spec.GpfdistService
	svc := &corev1.Service{
		ObjectMeta: meta(g, GpfdistServiceName(g, ordinal), ComponentGpfdist),
		Spec: corev1.ServiceSpec{
			Type: s.Type,
			// The instance's pod: the StatefulSet's pod-name label, within
			// the instances' selector.
			Selector:                 maps.Clone(Selector(g, ComponentInstance)),
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{servicePort(PortNameGpfdist, g.Spec.Ports.Gpfdist)},
		},
	}
	svc.Spec.Selector[appsv1.StatefulSetPodNameLabel] = PodName(g, ordinal)
	svc.Labels[LabelOrdinal] = fmt.Sprint(ordinal)
	if len(s.Annotations) > 0 {
		svc.Annotations = maps.Clone(s.Annotations)
	}
	return svc
}

// LabelOrdinal is on each gpfdist Service: the ordinal of its instance, so
// that the controller finds the Services of departed instances.
const LabelOrdinal = "gpss.steward.dev/ordinal"

func meta(g *gpssv1.GpssCluster, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: g.Namespace, Labels: Labels(g, component)}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromString(name)}
}

// ServiceAccount is the ServiceAccount the operator creates for the
// instances when spec.serviceAccountName is empty: no roles, no mounted
// token (GPSS needs no Kubernetes API). Nil when spec names one.
func ServiceAccount(g *gpssv1.GpssCluster) *corev1.ServiceAccount {
	if g.Spec.ServiceAccountName != "" {
		return nil
	}
	return &corev1.ServiceAccount{
		ObjectMeta:                   meta(g, OwnServiceAccountName(g), ComponentInstance),
		AutomountServiceAccountToken: ptr.To(false),
	}
}
