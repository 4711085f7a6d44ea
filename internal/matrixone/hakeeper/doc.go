// Package hakeeper reads HAKeeper's view of a MatrixOne cluster as mo-agent
// serves it (GET /v1/cluster, JSON; tools/mo-agent/view.go is the other
// side of the contract) and answers the questions the controllers ask of
// it: is HAKeeper running, has every log shard a leader, which stores are
// up, and may a log store be replaced without a shard losing its majority.
//
// MatrixOne's own HAKeeper client needs cgo and about 750 packages, so the
// operator never imports it: mo-agent runs beside the log stores and the
// operator reads JSON, concurrently and with deadlines, through the
// framework's probe collector. StoreID is the one function both sides
// compute.
package hakeeper
