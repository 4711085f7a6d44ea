// Package proc starts the cluster's components as detached daemons and stops
// exactly those processes later, identified by PID and process start time so
// that a recycled PID is never sent a signal.
package proc
