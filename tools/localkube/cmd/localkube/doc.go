// Command localkube builds, starts and stops a real single-machine
// Kubernetes cluster made of upstream components: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, one real node (containerd, runc,
// CNI bridge, kubelet, kube-proxy), CoreDNS, a dynamic volume provisioner
// and optional kwok-simulated nodes, all inside a network namespace with no
// route off the machine.
//
//	localkube build                   build and cache every binary (idempotent)
//	localkube up [--simulated-nodes N] [--simulated-pod-capacity P]
//	             [--dns-caches-cluster-domain]
//	                                  start a cluster, wait until it is usable
//	localkube status                  show components and nodes
//	localkube load-image ARCHIVE      import a docker-archive into the node
//	localkube logs COMPONENT          print a component's log
//	localkube restart COMPONENT       stop a component and start it again
//	localkube down                    stop everything and leave nothing behind
package main
