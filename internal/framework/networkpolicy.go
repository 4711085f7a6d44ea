package framework

import (
	"os"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// OperatorPodLabels are the labels of Steward's own pods that every install
// gives them (the chart's selector labels but the release's instance).
var OperatorPodLabels = map[string]string{
	"app.kubernetes.io/name":      "steward",
	"app.kubernetes.io/component": "controller-manager",
}

// OperatorPeer is Steward's pods as a NetworkPolicy peer, for the policies
// that admit the operator to the ports it observes and administers a
// system through: the pods with OperatorPodLabels in namespace, or in any
// namespace when namespace is empty (an operator run out of a cluster
// does not know its own, and reaches pods only through a tunnel anyway).
func OperatorPeer(namespace string) networkingv1.NetworkPolicyPeer {
	ns := &metav1.LabelSelector{}
	if namespace != "" {
		ns.MatchLabels = map[string]string{"kubernetes.io/metadata.name": namespace}
	}
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: OperatorPodLabels}, NamespaceSelector: ns}
}

// OperatorNamespace is the namespace the operator runs in, from
// $POD_NAMESPACE (the chart sets it); empty when unknown.
func OperatorNamespace() string { return os.Getenv("POD_NAMESPACE") }

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// ApplyNetworkPolicy makes what spec asks for of np: applies it as a child
// playing component while spec.Enabled, and deletes the object's
// NetworkPolicies otherwise (DeleteOrphans: only those it controls and
// labels as its own).
func (c *Context[T]) ApplyNetworkPolicy(spec commonv1.NetworkPolicySpec, np *networkingv1.NetworkPolicy, component string) error {
	if spec.Enabled {
		if err := c.Apply(np, component); err != nil {
			return err
		}
	}
	_, err := c.DeleteOrphans(&networkingv1.NetworkPolicyList{})
	return err
}
