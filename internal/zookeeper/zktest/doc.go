// Package zktest starts real ZooKeeper servers for tests. It is not a
// stand-in: every server is Apache ZooKeeper 3.8 from Debian's packages, the
// JVM and jars of Steward's ZooKeeper image, run through the image's own
// entrypoint (images/zookeeper/zk-run) the way a container runtime would.
//
// The servers come from the image's cached root filesystem,
// .cache/images/zookeeper-rootfs-*.tar, written by images/zookeeper/build.sh
// ("make images"). It is unpacked once into a cache directory keyed by the
// tarball's name, size and modification time (under the user's cache
// directory, steward/zktest; delete it at will) and shared read-only by every
// server. Each server runs as the image's user (uid 100, gid 101, switched by
// the image's setpriv), chrooted into a read-only bind mount of that tree
// inside its own mount, PID and UTS namespaces, with its own /conf, /data (in
// the test's t.TempDir), /tmp, /dev and /proc, the way smoke.sh beside the
// image runs it. The JVM is PID 1 of its namespace and has a parent-death
// signal, so that a test process killed outright takes its servers with it.
//
// Every server listens on 127.0.0.1 only, on free ports (client, quorum,
// election, AdminServer), with dynamic reconfiguration enabled
// (reconfigEnabled=true; only the super user may reconfigure, with
// SuperPassword, as in a cluster), standaloneEnabled=false for
// ensembles of more than one server, zk-run's four-letter-word whitelist
// (srvr, stat, mntr, ruok, conf), tickTime=500, a 128 MiB heap and JVM
// options that favor a quick start. Servers are killed on t.Cleanup, whatever
// the test's outcome; a server's output goes to a log file whose last lines
// are logged when the test fails.
//
// Running servers needs root (chroot, namespaces, mounts), Linux, unshare and
// chroot on the host, and the tarball. Without them [Start] skips the test,
// naming what is missing, unless the environment variable CI is "true": then
// it fails, so that CI cannot skip these tests silently. ZKTEST_DEFER, set by
// make unit (which builds no image), skips them whatever CI says: make
// rootfs-tests, the lane after it, runs them. ZKTEST_ROOTFS names another
// root filesystem tarball.
//
// Those rules and the supervision of the servers' processes are
// internal/testenv/realserver's, shared with the other harnesses of real
// servers.
//
// +steward:role=testing
package zktest
