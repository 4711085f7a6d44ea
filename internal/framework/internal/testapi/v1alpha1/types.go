package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// GroupVersion is the group and version of the test API.
var GroupVersion = schema.GroupVersion{Group: "test.framework.steward.dev", Version: "v1alpha1"}

// AddToScheme registers the test kinds with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{}, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Paused stops reconciliation.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Replicas is the number of Gadget children; negative is invalid.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// DependsOn names Gadgets in the namespace the Widget waits for.
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// Config is rolled out as an immutable ConfigMap referenced by the
	// Widget's Deployment.
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// Flow asks for the named task flow to run once per FlowToken.
	// +optional
	Flow string `json:"flow,omitempty"`
	// FlowToken distinguishes requests to run Flow.
	// +optional
	FlowToken string `json:"flowToken,omitempty"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	commonv1.StatusCore `json:",inline"`
	// ConfigMap is the name of the config ConfigMap in use.
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
}

// Widget is the test parent kind.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.operation.progress`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// StatusCore returns the status the framework owns.
func (w *Widget) StatusCore() *commonv1.StatusCore { return &w.Status.StatusCore }

// IsPaused reports spec.paused.
func (w *Widget) IsPaused() bool { return w.Spec.Paused }

// GadgetSpec is the desired state of a Gadget.
type GadgetSpec struct {
	// Index is the Gadget's ordinal among its Widget's children.
	// +optional
	Index int32 `json:"index,omitempty"`
	// Note is free text.
	// +optional
	Note string `json:"note,omitempty"`
}

// GadgetStatus is the observed state of a Gadget; tests write it directly.
// It runs no flows, so its operation stays unset.
type GadgetStatus struct {
	commonv1.StatusCore `json:",inline"`
}

// Gadget is the test child and dependency kind.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GadgetSpec   `json:"spec,omitempty"`
	Status GadgetStatus `json:"status,omitempty"`
}

// GadgetList is a list of Gadgets.
//
// +kubebuilder:object:root=true
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

// StatusCore returns the status the framework owns.
func (g *Gadget) StatusCore() *commonv1.StatusCore { return &g.Status.StatusCore }
