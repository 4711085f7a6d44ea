package build_test

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

func TestNetworkPolicy(t *testing.T) {
	// The operator's peer is the framework's (OperatorPeer); any peer
	// will do here.
	operator := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "steward"}}}
	apps := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "apps"}}}
	for _, tc := range []struct {
		name        string
		clientsFrom []networkingv1.NetworkPolicyPeer
		adminPort   int32
		// wantClients is who may reach the client port: nil for anyone.
		wantClients []networkingv1.NetworkPolicyPeer
	}{
		{name: "clients from anywhere", adminPort: 8080},
		{name: "clients from one namespace, and the operator", clientsFrom: []networkingv1.NetworkPolicyPeer{apps}, adminPort: 9090,
			wantClients: []networkingv1.NetworkPolicyPeer{apps, operator}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newZK(func(s *zkv1.ZookeeperClusterSpec) {
				s.NetworkPolicy.Enabled, s.NetworkPolicy.ClientsFrom, s.AdminPort = true, tc.clientsFrom, tc.adminPort
			})
			np := build.NetworkPolicy(zk, operator)
			if np.Name != "zk" || np.Namespace != "ns" {
				t.Errorf("NetworkPolicy %s/%s, want ns/zk", np.Namespace, np.Name)
			}
			checkSelectsServers(t, np.Spec.PodSelector.MatchLabels)
			if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
				t.Errorf("policy types %v, want Ingress only (egress is left alone)", np.Spec.PolicyTypes)
			}
			// Every port a server listens on has exactly one rule, from
			// the peers that need it.
			from := map[int32][]networkingv1.NetworkPolicyPeer{}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					if p.Protocol == nil || *p.Protocol != "TCP" || p.Port == nil {
						t.Errorf("port %+v, want TCP with a number", p)
						continue
					}
					if _, dup := from[p.Port.IntVal]; dup {
						t.Errorf("port %d in two rules", p.Port.IntVal)
					}
					from[p.Port.IntVal] = rule.From
				}
			}
			servers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: build.Selector(zk, build.ComponentServer)}}}
			want := map[int32][]networkingv1.NetworkPolicyPeer{
				build.ClientPort:   tc.wantClients,
				build.QuorumPort:   servers,
				build.ElectionPort: servers,
				tc.adminPort:       {operator},
			}
			if got, w := fmt.Sprint(from), fmt.Sprint(want); got != w {
				t.Errorf("ingress by port:\n got %s\nwant %s", got, w)
			}
		})
	}
}
