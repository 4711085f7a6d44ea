package standard

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// RestrictedContainer returns the security context of Steward's
// containers: no privilege escalation, no capabilities, and a read-only
// root filesystem (a member's state lives on its volumes). A system whose
// program writes beside its binary turns the last off, saying why.
func RestrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// ContainerPort returns the TCP container port name.
func ContainerPort(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}
