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
//
// Each system's scenarios live in its own file (zookeeper_test.go), which
// registers them from init; TestSystems runs them. E2E_SYSTEMS (make e2e
// SYSTEMS=zookeeper) narrows the suite to some systems: the others' tests
// are skipped with the reason, and only their image archives are loaded.
// Empty, it is every system built into the operator, previews included,
// as CI runs it; "all" is the operator's all, without the previews. The
// image archives are the *.tar files of E2E_IMAGES_DIR (_output/images).
//
// E2E_DEPTH (make e2e E2E_DEPTH=smoke) says how deep the suite goes: full,
// the default, runs every test; smoke runs the operator's install check
// and each selected system's smoke spec only (a cluster created, Ready,
// serving one request, deleted), the first spec of every system at both
// depths. docs/testing.md lists the test lanes.
//
// A failed test dumps its namespace (smoke_test.go, scenario.go), and a
// failed run ends with a one-line-per-fact failure summary (summary.go):
// CI keeps only the end of the output. Tests report failures through
// errorf, fatalf and fatalNow, which add the message to the summary.
package e2e
