// Package hakeeper reads HAKeeper's view of a MatrixOne cluster as mo-agent
// serves it (GET /v1/cluster, JSON) and picks the freshest of several
// answers. The view's types and the questions the controllers ask of it —
// is HAKeeper running, has every log shard a leader, may a log store go
// without a shard losing its majority — are in tools/mo-agent/wire, the
// module both sides import; their tests are here, where make test runs
// them.
//
// MatrixOne's own HAKeeper client needs cgo and about 750 packages, so the
// operator never imports it: mo-agent runs beside the log stores and the
// operator reads JSON, concurrently and with deadlines, through the
// framework's probe collector. wire.StoreID is the one function both sides
// compute.
//
// +steward:role=client
package hakeeper
