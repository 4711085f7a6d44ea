// Package v1alpha1 is a test-only API group, test.framework.steward.dev,
// whose kinds exercise the reconcile framework on a real API server: a
// Widget is reconciled by the framework and owns Gadgets (children) and
// waits for Gadgets (dependencies). Its CRDs are generated into
// ../crd and loaded by the framework's integration tests only; they are
// never installed by Steward.
//
// +kubebuilder:object:generate=true
// +groupName=test.framework.steward.dev
package v1alpha1
