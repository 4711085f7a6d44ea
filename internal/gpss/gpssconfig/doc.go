// Package gpssconfig is GPSS's configuration file, gpss.json: the keys GPSS
// documents (ListenAddress, Gpfdist, and the distributed Cluster block), a
// typed view of them for a reader, and, for the operator, validation of a
// user's configuration and its rendering with the keys the operator owns.
//
// It is GPSS's format, not the simulator's: the controller renders with it,
// and Steward's GPSS simulator reads what it rendered with the same rules a
// GPSS server applies (invalid JSON, or no Cluster.Id in a cluster, refuses
// to start; keys match in any letter case, as encoding/json matches them,
// which is why the operator's keys are owned in every case).
//
// +steward:role=client
package gpssconfig
