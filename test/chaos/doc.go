// Package chaos drives Steward's randomized fault suite (make chaos): from
// one seed, a run picks a bounded number of actions, operations a user
// makes (scale, reconfigure, change the image, delete and re-create) and
// faults (an operator replica killed, data pods killed or frozen, the API
// server restarted, a pod's network cut, a volume filled), waits after each for the system
// to settle, and checks its invariants, so that a violation names the seed
// and the step that found it and the same seed replays the same actions.
//
// The package holds no Kubernetes code: the actions, the settling and the
// invariants are each system's (test/e2e's chaos specs), this package the
// schedule. Replays are exact in the actions chosen and their choices, as
// long as an action's Enabled reads the state the actions keep (a model:
// the replica count asked for), not what the cluster shows at the moment.
package chaos
