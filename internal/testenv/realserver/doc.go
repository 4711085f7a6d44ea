// Package realserver is what the harnesses that start real servers for
// tests (internal/zookeeper/zktest, internal/s3/s3test) have in common: the
// rules for when such tests run, skip or fail, and the supervision of a
// server's process.
//
// The rules ([Usable]): a harness finds once per process whether its
// servers can run here and says so as a [Status]. Tests run when they can;
// they skip, naming what is missing, when they cannot, unless the
// environment variable CI is "true": then they fail, so that CI cannot skip
// them silently; they skip whatever CI says when the harness defers them to
// another lane (make unit defers them to make rootfs-tests); and they fail
// when what should work does not.
//
// A [Supervisor] runs one server's process at a time, in its own process
// group (so that a signal reaches everything the server forked) with a
// parent-death signal (so that a test process killed outright takes its
// servers with it), every run's output appended to one log file whose last
// lines a failed test logs. [Ports] hands out free ports on 127.0.0.1.
//
// +steward:role=testing
package realserver
