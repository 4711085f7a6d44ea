package v1alpha1

// MonitoringSpec says how a Prometheus finds a cluster's metrics. Embed it
// in a spec as monitoring.
type MonitoringSpec struct {
	// podMonitor makes a PodMonitor (the Prometheus operator's,
	// monitoring.coreos.com/v1) named after the cluster, in its namespace,
	// that scrapes the metrics port of each of the cluster's pods. Default
	// false; can change (false deletes it). Where the PodMonitor CRD is not
	// installed nothing is made, and the Monitoring condition says so.
	// +optional
	PodMonitor bool `json:"podMonitor,omitempty"`

	// podMonitorLabels are the PodMonitor's labels besides Steward's own,
	// by which a Prometheus selects it (its podMonitorSelector). Default:
	// none; can change.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !k.startsWith('app.kubernetes.io/'))`,message="labels under app.kubernetes.io/ are Steward's"
	PodMonitorLabels map[string]string `json:"podMonitorLabels,omitempty"`
}

// ConditionMonitoring is True while the PodMonitor spec.monitoring asks
// for exists, False while it cannot be made (reason PodMonitorCRDMissing);
// absent when none is asked for.
const ConditionMonitoring = "Monitoring"

// Reasons of the Monitoring condition.
const (
	// ReasonPodMonitorApplied: the PodMonitor is applied.
	ReasonPodMonitorApplied = "PodMonitorApplied"
	// ReasonPodMonitorCRDMissing: the cluster has no PodMonitor CRD (the
	// Prometheus operator is not installed).
	ReasonPodMonitorCRDMissing = "PodMonitorCRDMissing"
)
