// Package testenv gives integration tests a real kube-apiserver and etcd
// (envtest, with the binaries in $KUBEBUILDER_ASSETS) shared by all tests of
// a package, optionally with admission webhooks installed that call a
// webhook server the tests run, and a logger that writes to the test. It is
// imported only by tests.
package testenv
