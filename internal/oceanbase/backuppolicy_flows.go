package oceanbase

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The backup policy's flow and its steps, persisted in status.operation.
const (
	flowArchiveDest  = "archive-destination"
	stepStopArchive  = "stop-archive"
	stepSetDest      = "set-archive-destination"
	stepStartArchive = "start-archive"
)

// archiveDestFlow moves a tenant's archive to the spec's destination
// while it archives, as OceanBase requires: stop archiving (NOARCHIVELOG;
// the round ends STOP), set the destination, start again (a new round,
// from the current SCN: the log between the two rounds is in neither, so
// a restore cannot reach a point inside that gap, only before or after
// it). Each step reads OceanBase first, so a flow resumed after a restart
// does not stop or start twice.
func (c *BackupPolicyController) archiveDestFlow() framework.Flow[*BackupPolicy, *policyState] {
	return framework.Flow[*BackupPolicy, *policyState]{
		Name: flowArchiveDest,
		Steps: []framework.Step[*BackupPolicy, *policyState]{
			{Name: stepStopArchive, Run: c.stopArchive},
			{Name: stepSetDest, Run: c.setDestStep},
			{Name: stepStartArchive, Run: c.startArchiveStep},
		},
		MaxAttempts: tenantFlowMaxAttempts,
	}
}

// policyObserved returns what the pass observed, or why OceanBase could
// not be read.
func policyObserved(st *policyState) (*policyState, error) {
	if st == nil {
		return nil, errors.New("OceanBase has not answered")
	}
	return st, nil
}

func (c *BackupPolicyController) stopArchive(ctx *PolicyContext, seen *policyState) (bool, error) {
	st, err := policyObserved(seen)
	if err != nil {
		return false, err
	}
	switch {
	case !st.archiving():
		return true, nil
	case st.logMode == "NOARCHIVELOG":
		return false, nil // stopping: the round turns STOP
	}
	if err := obsql.ArchiveLog(ctx, st.db, st.tenant.Spec.TenantName, false); err != nil {
		return false, err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventArchiveStopped, "Stopped archiving the log of %s to change its destination", st.tenant.Spec.TenantName)
	return false, nil
}

func (c *BackupPolicyController) setDestStep(ctx *PolicyContext, seen *policyState) (bool, error) {
	st, err := policyObserved(seen)
	if err != nil {
		return false, err
	}
	if !st.archiveDestDiffers(ctx.Obj) {
		return true, nil
	}
	return false, c.setArchiveDest(ctx, st)
}

func (c *BackupPolicyController) startArchiveStep(ctx *PolicyContext, seen *policyState) (bool, error) {
	st, err := policyObserved(seen)
	if err != nil {
		return false, err
	}
	if ctx.Obj.Spec.Suspend || st.archiving() {
		return true, nil // suspended: Observe defers the new round
	}
	return false, c.startArchive(ctx, st)
}
