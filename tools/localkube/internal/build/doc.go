// Package build makes every binary and image localkube runs: the upstream
// Kubernetes components from their Go module, etcd, kwok, CoreDNS and runc
// from theirs at pinned versions, localkube's own helpers, and the pause
// image. It installs the Debian packages the node needs when they are
// missing. Each output is recorded with a stamp of its inputs, so a second
// run only checks stamps.
package build
