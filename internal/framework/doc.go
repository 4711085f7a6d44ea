// Package framework is the reconcile framework every Steward controller
// stands on. A controller implements an [Actor] (Observe and Finalize, and
// usually Declare) for its kind, an [Object] whose status embeds
// commonv1.StatusCore, and registers a [Reconciler] with [Setup]. The
// framework then runs the pass of docs/design/framework.md:
//
//  1. get the object; apply defaults in memory ([Defaulter]);
//  2. deleting: call Finalize until done, then remove the finalizer;
//     otherwise make sure the finalizer is present;
//  3. paused (spec.paused through [Pausable], or [PausedAnnotation]):
//     set Paused=True and stop;
//  4. spec found invalid at this generation: stop; [Validator] errors mark
//     the spec invalid;
//  5. declared dependencies ([DependencyDeclarer]) not ready: set
//     DependenciesReady=False naming them and requeue with backoff;
//  6. the declarative phase ([Declarer]) on every pass, flows included:
//     apply the children, observe the application into status, and return
//     the observation, of the actor's own type;
//  7. an active task flow ([Flow], persisted in status.operation): act on a
//     rescue annotation, run the current step; otherwise call Observe and
//     run the one [Action] it returns. The step and Observe receive what
//     Declare returned in the same pass;
//  8. write status once, as a merge patch of the status subresource, only
//     if it changed, stamping observedGeneration; record an Event per
//     condition transition;
//  9. errors: a conflict requeues quietly; [InvalidSpec] and [Terminal] set
//     a terminal condition and stop retrying; other errors back off
//     exponentially through controller-runtime's rate limiter.
//
// [Context] carries the defaulted object, the clients, the Event recorder,
// the logger and the ready dependencies, and helpers for children
// ([Context.Apply], [Context.DeleteOrphans]) and config rollouts
// ([Context.EnsureConfigMap], [Context.CollectConfigMaps]).
//
// [SetupWebhooks] registers the kind's admission webhooks, built on the
// same [Defaulter] and [Validator] (and the admission-only [UpdateDefaulter],
// [Warner] and [UpdateValidator]), so that admission and the controller
// apply one set of rules. [Context.ApplyPodMonitor] makes the PodMonitor a
// cluster's commonv1.MonitoringSpec asks for.
//
// The subpackages hold the concurrent application probe collector (probe),
// the framework's metrics (metrics), the mechanics of sets of pods
// (workload) and what pure builders share without controller-runtime
// (standard). Task flows' API types are in api/common (commonv1.Operation).
package framework
