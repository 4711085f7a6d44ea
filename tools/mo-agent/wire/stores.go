package wire

// FailedPodKey is the key of a log set's stores ConfigMap, beside pod's
// replacement UUID (the key pod), that holds the UID of the pod whose
// failed store the operator replaces. The operator records both before it
// deletes that pod and its volume; meanwhile the pod's container may
// restart, on the volume about to be deleted, and must not start as the
// new store: HAKeeper would then know the new UUID, and the pod re-created
// on the new volume would be refused as a store that lost its data. Only
// another pod of that name (another UID) takes the replacement.
func FailedPodKey(pod string) string { return pod + ".failed-pod" }

// PodUIDEnv is the variable of a log pod's mo-agent that holds the pod's UID
// (the downward API's metadata.uid), compared with FailedPodKey's value.
const PodUIDEnv = "POD_UID"
