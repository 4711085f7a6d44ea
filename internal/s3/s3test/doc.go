// Package s3test starts real S3 servers for tests. It is not a stand-in:
// every server is versitygw, at the version images/versitygw/go.mod pins,
// the server Steward's e2e suite and demo run as MatrixOne's object store
// (docs/design/matrixone-data.md), with its POSIX backend: a bucket is a
// directory of the server's root, an object a file.
//
// The binary is built once from that module (go -C images/versitygw build,
// static, about 85 s on two busy cores) into the user's cache directory,
// steward/s3test/versitygw-<version>, and shared by every test process
// after it (a lock file keeps parallel packages from building it twice;
// delete it at will). S3TEST_BIN names a prebuilt binary instead.
//
// Each server listens on 127.0.0.1 only, on a free port, plain HTTP or,
// with [WithTLS], HTTPS with a certificate of a CA made for the server
// ([Server.CABundle]). It runs in single-account mode with root
// credentials generated per server, region us-east-1, path-style
// addressing, no admin API, web UI, metrics or event sinks (versitygw
// sends nothing anywhere unless a flag asks), its root in the test's
// t.TempDir() (user extended attributes needed, as ext4 has). It is killed
// on t.Cleanup, whatever the test's outcome, and has a parent-death
// signal, so that a test process killed outright takes its servers with
// it; its output goes to a log file whose last lines are logged when the
// test fails.
//
// When the binary can be neither found nor built (no go command, no access
// to Go modules), [Start] skips the test, saying why, unless the
// environment variable CI is "true": then it fails, so that CI cannot skip
// these tests silently. S3TEST_DEFER, set by make unit, defers the build
// to another lane: with it, the tests run only when the binary is already
// cached or S3TEST_BIN names one, and skip otherwise, whatever CI says;
// make rootfs-tests, the lane after make unit, builds it and runs them.
//
// Those rules and the supervision of the servers' processes are
// internal/testenv/realserver's, shared with the other harnesses of real
// servers.
//
// +steward:role=testing
package s3test
