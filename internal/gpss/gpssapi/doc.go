// Package gpssapi holds GPSS's gRPC APIs as Go code generated from .proto
// files written for Steward (make protos): batch is the Batch Data API
// (service api.Gpss), job the job API (service gpss.JobService). Both keep
// GPSS's proto packages, names and field numbers, so that they are wire
// compatible with a real GPSS; each carries only what Steward's controller
// and its GPSS simulator use.
//
// +steward:role=client
package gpssapi
