// Package cluster brings a single-machine Kubernetes cluster up and down:
// etcd, the control plane, one real node (containerd, runc, CNI bridge,
// kubelet, kube-proxy), CoreDNS, a dynamic volume provisioner and optional
// kwok-simulated nodes. Every component runs inside one network namespace
// whose only route off the machine leads into a device with no ports, so
// nothing the cluster starts can send a packet anywhere but to itself. The
// API server is reached from the host through a loopback forwarder.
//
// The files split by concern: config.go (addresses and paths), render.go
// (pure functions from Config to configuration files), components.go (the
// daemons and their command lines), up.go, down.go, status.go.
package cluster
