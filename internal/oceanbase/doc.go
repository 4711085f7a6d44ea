// Package oceanbase holds Steward's OceanBase controllers (docs/oceanbase.md
// says what they do): OBCluster's, OBTenant's and OBParameter's; OBZone and
// OBServer are views the OBCluster's controller writes. An OBCluster's zones are
// StatefulSets of observers, each observer with its own Service whose IP is
// its address in OceanBase; the controller bootstraps the cluster as a task
// flow, adds servers as their pods come, deletes servers from OceanBase
// before their pods go, and reports what OceanBase says of its servers and
// zones. It speaks only OceanBase's MySQL protocol and administrative SQL
// (internal/oceanbase/obsql); the tests run obsim in the observers' place.
package oceanbase
