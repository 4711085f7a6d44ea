// Package testenv gives integration tests a real kube-apiserver and etcd
// (envtest, with the binaries in $KUBEBUILDER_ASSETS) shared by all tests of
// a package, optionally with admission webhooks installed that call a
// webhook server the tests run, a logger that writes to the test, and the
// start and stop of a manager for the length of a test. It is imported only
// by tests.
package testenv
