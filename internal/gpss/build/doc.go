// Package build holds the pure builders of GPSS's children: functions from
// a GpssCluster to the objects the controller applies (the instances'
// StatefulSet, the gRPC Service, one gpfdist Service per instance, the
// gpss.json ConfigMap, the ServiceAccount, and the managed etcd's
// StatefulSet and Service), with no client. Each is tested by tables. They
// take a defaulted cluster (gpssv1.Default, which the framework applies
// before every pass and the webhooks before rendering) and do not default
// again.
//
// +steward:role=builder
package build
