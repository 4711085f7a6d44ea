package build

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// HeadlessService returns the peers' headless Service: it gives each pod
// the stable DNS name of the server lines, and publishes pods that are not
// ready, since a server can only become ready (serve) once its peers reach
// it.
func HeadlessService(zk *zkv1.ZookeeperCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      HeadlessServiceName(zk),
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentHeadless),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 Selector(zk, ComponentServer),
			Ports: []corev1.ServicePort{
				servicePort(PortNameClient, ClientPort),
				servicePort(PortNameQuorum, QuorumPort),
				servicePort(PortNameElection, ElectionPort),
			},
		},
	}
}

// ClientService returns the Service clients connect to, of
// spec.clientService's type, on the ready (serving) servers.
func ClientService(zk *zkv1.ZookeeperCluster) *corev1.Service {
	cs := zk.Spec.ClientService
	port := servicePort(PortNameClient, ClientPort)
	if cs.NodePort != nil && (cs.Type == corev1.ServiceTypeNodePort || cs.Type == corev1.ServiceTypeLoadBalancer) {
		port.NodePort = *cs.NodePort
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ClientServiceName(zk),
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentClient),
		},
		Spec: corev1.ServiceSpec{
			Type:     cs.Type,
			Selector: Selector(zk, ComponentServer),
			Ports:    []corev1.ServicePort{port},
		},
	}
	if len(cs.Annotations) > 0 {
		svc.Annotations = maps.Clone(cs.Annotations)
	}
	return svc
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Protocol:   corev1.ProtocolTCP,
		Port:       port,
		TargetPort: intstr.FromString(name),
	}
}
