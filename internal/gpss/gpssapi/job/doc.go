// Package job is GPSS's job API (service gpss.JobService: submit, start,
// stop, list and remove jobs), generated from gpssjob.proto (make protos).
package job
