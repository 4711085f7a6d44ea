package v1alpha1

// Reasons that only GpssCluster uses, next to the shared ones in api/common
// (commonv1: Creating, Scaling, Restarting, RolloutHalted, Stable, ...).
// Users read them in status.conditions, in kubectl get's Reason column and
// in kubectl get events; docs/gpss.md says what each means. They are API:
// renaming one breaks whoever matches on it.

// Reasons of Progressing and Ready.
const (
	// ReasonWaitingForEtcd: the managed etcd is not ready yet.
	ReasonWaitingForEtcd = "WaitingForEtcd"
	// ReasonInstancesNotReady: an instance's pod is not ready.
	ReasonInstancesNotReady = "InstancesNotReady"
)

// Reasons of the Events the GPSS controller records.
const (
	// EventInstanceRestarted (Normal): an instance's pod was deleted to
	// restart it onto the latest pod template.
	EventInstanceRestarted = "InstanceRestarted"
	// EventJobsStopped (Normal): a scale-in stopped the running jobs.
	EventJobsStopped = "JobsStopped"
	// EventJobsStarted (Normal): the jobs a scale-in stopped run again.
	EventJobsStarted = "JobsStarted"
	// EventJobsInError (Warning): jobs entered JOB_ERROR.
	EventJobsInError = "JobsInError"
)
