package v1alpha1

import networkingv1 "k8s.io/api/networking/v1"

// NetworkPolicySpec fences a cluster's pods with a NetworkPolicy. Embed it
// in a spec as networkPolicy.
type NetworkPolicySpec struct {
	// enabled makes a NetworkPolicy, named after the cluster, that admits
	// traffic to the cluster's pods only on the ports the system serves,
	// each only from the peers that need it (the system's documentation
	// lists them): its own pods on its peer ports, Steward's operator on
	// the ports it observes and administers the system through, and
	// clientsFrom on the client ports. Only ingress is fenced; egress is
	// as the namespace's other policies have it. Default false; can change
	// (false deletes the policy). It takes effect only where the cluster's
	// network plugin enforces NetworkPolicies.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// clientsFrom are the peers that may reach the client ports, as a
	// NetworkPolicy's from. Default: none, which admits every source to
	// the client ports (the policy then fences the other ports only); can
	// change.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ClientsFrom []networkingv1.NetworkPolicyPeer `json:"clientsFrom,omitempty"`
}
