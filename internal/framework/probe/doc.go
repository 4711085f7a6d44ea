// Package probe talks to the pods of an application concurrently and never
// lets a slow one hold up a reconcile pass.
//
// A [Collector] knows a set of [Target]s (typically pods, grouped by the
// object they belong to) and calls each in the background at its own
// cadence: every Interval while it answers, RetryInterval after it fails,
// backing off to MaxInterval while it keeps failing, and at once when its
// address or revision changes. A pass reads the latest [Result] of each
// target, with its age and error, through [Collector.Watch], which never
// waits; when an answer changes in a way the controller acts on,
// Options.Notify names the object so that its controller enqueues it. No
// second call to a target starts while one is in flight, so a hung pod
// costs one goroutine, not one per pass, and a partitioned cluster costs
// its controller nothing but a few background calls. [Collector.Collect]
// also calls the targets whose answers are older than MinInterval and
// waits for them up to a deadline, for the steps of an operation that must
// decide on fresh answers.
//
// Errors are reported by class ([Classify]: timeout, refused, unreachable,
// protocol) with a text that stays the same while the failure does
// ([Describe]), so that a target that keeps failing does not rewrite status.
// Controllers report the per-target errors in status (the pod did not
// answer) instead of failing the reconcile.
package probe
