// Package flow holds the API types of Steward's task flows: the
// [Operation] record that every kind running long operations embeds as
// status.operation, its [Phase], and the rescue verbs a user writes into the
// [RescueAnnotation].
//
// The types carry kubebuilder markers and generated DeepCopy methods so that
// the systems' API types can embed them and controller-gen can describe them
// in the systems' CRDs. The code that runs flows lives in the parent package
// (framework.Flow, framework.Step).
//
// +kubebuilder:object:generate=true
package flow
