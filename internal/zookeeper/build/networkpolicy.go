package build

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// NetworkPolicy returns the servers' NetworkPolicy (spec.networkPolicy):
// the client port from clientsFrom and operator (any source when
// clientsFrom lists none), the quorum and election ports from the servers
// themselves, the AdminServer from operator. operator is Steward's pods:
// they probe the AdminServer and change the membership through the client
// port. Only ingress is fenced.
func NetworkPolicy(zk *zkv1.ZookeeperCluster, operator networkingv1.NetworkPolicyPeer) *networkingv1.NetworkPolicy {
	servers := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: Selector(zk, ComponentServer)}}
	var clients []networkingv1.NetworkPolicyPeer
	if from := zk.Spec.NetworkPolicy.ClientsFrom; len(from) > 0 {
		clients = append(slices.Clone(from), operator)
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      zk.Name,
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentServer),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: Selector(zk, ComponentServer)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: tcpPorts(ClientPort), From: clients},
				{Ports: tcpPorts(QuorumPort, ElectionPort), From: []networkingv1.NetworkPolicyPeer{servers}},
				{Ports: tcpPorts(zk.Spec.AdminPort), From: []networkingv1.NetworkPolicyPeer{operator}},
			},
		},
	}
}

func tcpPorts(ports ...int32) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		out[i] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}
	}
	return out
}
