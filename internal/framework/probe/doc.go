// Package probe talks to the pods of an application concurrently and never
// lets a slow one hold up a reconcile pass.
//
// A [Collector] calls every [Target] in its own goroutine with a per-call
// timeout, waits for the answers up to an overall deadline, and returns at
// once whatever it knows: for each target the latest [Result] with its age
// and error. A call still running when the deadline passes keeps running in
// the background and its answer is cached for the next pass; no second call
// to the same target is started while one is in flight, so a hung pod costs
// one goroutine, not one per pass.
//
// Controllers report the per-target errors in status (the pod did not
// answer) instead of failing the reconcile.
package probe
