// Package batch is GPSS's Batch Data API (service api.Gpss: connect, open a
// table, write rows, close), generated from gpss.proto (make protos).
package batch
