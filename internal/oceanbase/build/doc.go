// Package build holds the OceanBase controller's pure builders: functions
// from a defaulted OBCluster to the objects it wants (the zones'
// StatefulSets, the servers' Services, the client Service), with no client.
//
// +steward:role=builder
package build
