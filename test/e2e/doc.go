// Package e2e holds the end-to-end suites. They run on a real local cluster
// made by tools/localkube — real kubelet, containerd, runc, CNI, kube-proxy
// and DNS — with images built on this machine, and are compiled only with
// the e2e build tag.
//
// TestMain brings the cluster up, builds and loads the images, runs the
// suite, then brings the cluster down and fails the run if `down` left a
// process, mount, network namespace or cgroup behind. Set
// E2E_REUSE_CLUSTER=1 to run against a cluster that is already up and leave
// it running.
package e2e
