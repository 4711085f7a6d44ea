package oceanbase

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The operation controller's RBAC.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantoperations,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantoperations/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obtenantoperations/finalizers,verbs=update

// TenantOperation is the kind the operation controller reconciles.
type TenantOperation = obv1.OBTenantOperation

// OperationContext is the framework's pass context of an
// OBTenantOperation.
type OperationContext = framework.Context[*TenantOperation]

// Operation flows (one per type) and their steps, persisted in
// status.operation.
const (
	flowSwitchover        = "switchover"
	stepPrimaryToStandby  = "primary-to-standby"
	stepStandbyToPrimary  = "standby-to-primary"
	stepFollowNewPrimary  = "follow-new-primary"
	flowFailover          = "failover"
	stepActivate          = "activate"
	flowChangePassword    = "change-password"
	stepSetPassword       = "set-password"
	stepUpdateSecret      = "update-secret"
	flowReplayLog         = "replay-log"
	stepRecover           = "recover"
	flowUpgradeTenant     = "upgrade-tenant"
	stepRunUpgradeJob     = "run-upgrade-job"
	operationMaxAttempts  = 10
	operationStepDeadline = 10 * time.Minute
)

// TenantOperationController is the OBTenantOperation actor: it runs the
// operation's flow once. Every step reads OceanBase first and acts only
// when its work is not done, so a flow resumed after a restart finishes
// the operation once.
type TenantOperationController struct {
	opts   Options
	logins *logins
}

// NewTenantOperationController returns an operation controller.
func NewTenantOperationController(opts Options) *TenantOperationController {
	opts = opts.withDefaults()
	return &TenantOperationController{opts: opts, logins: newLogins(opts)}
}

func setupTenantOperations(mgr ctrl.Manager, opts Options) error {
	c := NewTenantOperationController(opts)
	_, err := framework.Setup(mgr, framework.Options[*TenantOperation, *operationState]{
		Actor: c, App: build.OperationApp, PartOf: build.PartOf,
		Flows:  []framework.Flow[*TenantOperation, *operationState]{c.switchoverFlow(), c.failoverFlow(), c.changePasswordFlow(), c.replayLogFlow(), c.upgradeFlow()},
		Resync: c.opts.Resync, ResyncNotReady: transitionPoll,
	})
	return err
}

// operationFlows maps an operation's type to its flow.
var operationFlows = map[string]string{
	obv1.OperationSwitchover: flowSwitchover, obv1.OperationFailover: flowFailover,
	obv1.OperationChangePassword: flowChangePassword, obv1.OperationReplayLog: flowReplayLog,
	obv1.OperationUpgrade: flowUpgradeTenant,
}

// operationTenant is what a pass read of one OBTenant an operation names.
type operationTenant struct {
	obj     *Tenant
	cluster *Cluster
	db      *sql.DB       // the cluster's sys login
	row     *obsql.Tenant // nil: OceanBase has no such tenant
}

// role is the tenant's role, "" when OceanBase has no such tenant.
func (t *operationTenant) role() string {
	if t.row == nil {
		return ""
	}
	return t.row.Role
}

// operationState is what a pass read of the operation's tenants, by
// OBTenant name.
type operationState struct {
	tenants map[string]*operationTenant
}

// operationFinished reports whether the operation's flow ended: it
// succeeded or was aborted (a failed flow waits for a rescue).
func operationFinished(o *TenantOperation) bool {
	op := o.Status.Operation
	return op != nil && op.Name == operationFlows[o.Spec.Type] &&
		(op.Phase == commonv1.PhaseSucceeded || op.Phase == commonv1.PhaseAborted)
}

// Dependencies returns the OBTenants the operation names, which must
// exist; a finished operation depends on nothing: it is a record.
func (*TenantOperationController) Dependencies(ctx *OperationContext) ([]framework.Dependency, error) {
	if operationFinished(ctx.Obj) {
		return nil, nil
	}
	var deps []framework.Dependency
	for _, name := range ctx.Obj.Tenants() {
		deps = append(deps, framework.Dependency{Object: &Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
			Ready: func(client.Object) (bool, string) { return true, "" }})
	}
	return deps, nil
}

// Declare reads the named tenants from OceanBase, and sets Ready from the
// flow's outcome.
func (c *TenantOperationController) Declare(ctx *OperationContext) (*operationState, error) {
	o := ctx.Obj
	if operationFinished(o) {
		setOperationReady(ctx)
		return nil, nil
	}
	st := &operationState{tenants: map[string]*operationTenant{}}
	for _, dep := range ctx.Dependencies {
		t, ob, db, err := tenantLogin(ctx, ctx.Client, ctx.Reader, c.logins, operationHolder(o), dep)
		if err == nil {
			var row *obsql.Tenant
			if row, err = obsql.TenantByName(ctx, db, t.Spec.TenantName); err == nil {
				st.tenants[t.Name] = &operationTenant{obj: t, cluster: ob, db: db, row: row}
				continue
			}
			c.logins.drop(ob.UID, db)
		}
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil
	}
	ctx.SetReady(false, obv1.ReasonOperationRunning, fmt.Sprintf("the %s runs", o.Spec.Type))
	return st, nil
}

// setOperationReady sets Ready of a finished operation.
func setOperationReady(ctx *OperationContext) {
	o := ctx.Obj
	if o.Status.Operation.Phase == commonv1.PhaseSucceeded {
		if o.Status.CompletedAt == nil {
			now := metav1.Now()
			o.Status.CompletedAt = &now
		}
		ctx.SetReady(true, "", fmt.Sprintf("the %s succeeded", o.Spec.Type))
		return
	}
	ctx.SetReady(false, obv1.ReasonOperationAborted, fmt.Sprintf("the %s was aborted: %s", o.Spec.Type, o.Status.Operation.Message))
}

// operationHolder names the operation's passes as a user of its clusters'
// logins.
func operationHolder(o *TenantOperation) string { return holderOf("OBTenantOperation", o.UID) }

// Observe starts the operation's flow, once.
func (c *TenantOperationController) Observe(ctx *OperationContext, st *operationState) (framework.Action[*TenantOperation], error) {
	o := ctx.Obj
	if st == nil || o.Status.Operation != nil {
		return nil, nil
	}
	return framework.StartFlow[*TenantOperation](operationFlows[o.Spec.Type], o.Spec.Type), nil
}

// Finalize releases the operation's logins: deleting the record undoes
// nothing.
func (c *TenantOperationController) Finalize(ctx *OperationContext) (bool, error) {
	c.logins.release(operationHolder(ctx.Obj))
	return true, nil
}

// operationFlow is a flow of one step list with the operations' bounds.
func operationFlow(name string, steps ...framework.Step[*TenantOperation, *operationState]) framework.Flow[*TenantOperation, *operationState] {
	for i := range steps {
		steps[i].Timeout = operationStepDeadline
	}
	return framework.Flow[*TenantOperation, *operationState]{Name: name, Steps: steps, MaxAttempts: operationMaxAttempts}
}

// seenTenant returns the OBTenant name as the pass read it.
func seenTenant(seen *operationState, name string) (*operationTenant, error) {
	if seen == nil || seen.tenants[name] == nil {
		return nil, fmt.Errorf("OceanBase has not answered for the OBTenant %s", name)
	}
	return seen.tenants[name], nil
}

// switchoverFlow swaps a primary and its standby: the primary becomes a
// standby (it takes no more writes), then the standby, once it replayed
// every commit, the primary (OceanBase refuses it before: the step tries
// again), then the old primary follows the new one, reading its log as
// the same standby user (its users are the old primary's).
func (c *TenantOperationController) switchoverFlow() framework.Flow[*TenantOperation, *operationState] {
	return operationFlow(flowSwitchover,
		framework.Step[*TenantOperation, *operationState]{Name: stepPrimaryToStandby, Run: func(ctx *OperationContext, seen *operationState) (bool, error) {
			p, err := seenTenant(seen, ctx.Obj.Spec.Switchover.Primary)
			if err != nil || p.role() == obv1.TenantRoleStandby {
				return err == nil, err
			}
			ctx.Log.Info("Switching the primary to standby", "tenant", p.obj.Spec.TenantName)
			return false, obsql.SwitchoverToStandby(ctx, p.db, p.obj.Spec.TenantName)
		}},
		framework.Step[*TenantOperation, *operationState]{Name: stepStandbyToPrimary, Run: func(ctx *OperationContext, seen *operationState) (bool, error) {
			s, err := seenTenant(seen, ctx.Obj.Spec.Switchover.Standby)
			if err != nil || s.role() == obv1.TenantRolePrimary {
				return err == nil, err
			}
			ctx.Log.Info("Switching the standby to primary", "tenant", s.obj.Spec.TenantName)
			return false, obsql.SwitchoverToPrimary(ctx, s.db, s.obj.Spec.TenantName)
		}},
		framework.Step[*TenantOperation, *operationState]{Name: stepFollowNewPrimary, Run: c.followNewPrimary},
	)
}

// followNewPrimary points the old primary's LOG_RESTORE_SOURCE at the new
// primary; done once OceanBase holds it.
func (c *TenantOperationController) followNewPrimary(ctx *OperationContext, seen *operationState) (bool, error) {
	sw := ctx.Obj.Spec.Switchover
	p, err := seenTenant(seen, sw.Primary)
	if err != nil {
		return false, err
	}
	s, err := seenTenant(seen, sw.Standby)
	if err != nil {
		return false, err
	}
	// The standby user and its Secret are the old primary's (its standbys
	// made them); the new primary has the same users.
	pw, err := framework.ReadPassword(ctx, ctx.Reader, p.obj.Namespace, build.StandbySourceSecret(p.obj, "").Name)
	if err != nil {
		return false, err
	}
	want := build.LogRestoreSource(clusterHosts(s.cluster), s.obj.Spec.TenantName, pw)
	if p.row == nil {
		return false, fmt.Errorf("OceanBase has no tenant %s", p.obj.Spec.TenantName)
	}
	have, err := obsql.TenantLogRestoreSource(ctx, p.db, p.row.ID)
	if err != nil || (have != nil && have.Value == want) {
		return err == nil, err
	}
	ctx.Log.Info("Pointing the old primary at the new one", "tenant", p.obj.Spec.TenantName, "primary", s.obj.Spec.TenantName)
	if err := obsql.SetLogRestoreSource(ctx, p.db, p.obj.Spec.TenantName, want); err != nil {
		return false, err
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventSwitchedOver, "Tenant %s is the primary; %s follows it", s.obj.Spec.TenantName, p.obj.Spec.TenantName)
	return false, nil
}

// failoverFlow activates a standby: it becomes a primary with what it has
// replayed.
func (c *TenantOperationController) failoverFlow() framework.Flow[*TenantOperation, *operationState] {
	return operationFlow(flowFailover,
		framework.Step[*TenantOperation, *operationState]{Name: stepActivate, Run: func(ctx *OperationContext, seen *operationState) (bool, error) {
			s, err := seenTenant(seen, ctx.Obj.Spec.Failover.Standby)
			if err != nil || s.role() == obv1.TenantRolePrimary {
				return err == nil, err
			}
			ctx.Log.Info("Activating the standby", "tenant", s.obj.Spec.TenantName)
			if err := obsql.ActivateStandby(ctx, s.db, s.obj.Spec.TenantName); err != nil {
				return false, err
			}
			ctx.Event(corev1.EventTypeNormal, obv1.EventTenantActivated, "Activated the standby %s: it is PRIMARY", s.obj.Spec.TenantName)
			return false, nil
		}},
	)
}

// changePasswordFlow sets a tenant's root password from the operation's
// Secret, then writes it into the OBTenant's rootPassword Secret: only
// after OceanBase took it, so the OBTenant's Secret never holds a password
// the tenant refuses.
func (c *TenantOperationController) changePasswordFlow() framework.Flow[*TenantOperation, *operationState] {
	return operationFlow(flowChangePassword,
		framework.Step[*TenantOperation, *operationState]{Name: stepSetPassword, Run: c.setPassword},
		framework.Step[*TenantOperation, *operationState]{Name: stepUpdateSecret, Run: c.updateSecret},
	)
}

// passwordChange returns the tenant a password change is of, as the pass
// read it, and the new password.
func passwordChange(ctx *OperationContext, seen *operationState) (*operationTenant, string, error) {
	cp := ctx.Obj.Spec.ChangePassword
	t, err := seenTenant(seen, cp.Tenant)
	if err != nil {
		return nil, "", err
	}
	pw, err := framework.ReadPassword(ctx, ctx.Reader, ctx.Obj.Namespace, cp.Secret)
	return t, pw, err
}

// setPassword is done when root logs in with the new password; otherwise
// it logs in with the OBTenant's Secret's and sets it.
func (c *TenantOperationController) setPassword(ctx *OperationContext, seen *operationState) (bool, error) {
	t, newPW, err := passwordChange(ctx, seen)
	if err != nil {
		return false, err
	}
	login := func(pw string) (*sql.DB, error) {
		return c.logins.connect(ctx, clusterHosts(t.cluster), obsql.Login{User: rootUser, Tenant: t.obj.Spec.TenantName, Password: pw})
	}
	if db, err := login(newPW); err == nil {
		db.Close()
		return true, nil
	}
	oldPW, err := framework.ReadPassword(ctx, ctx.Reader, t.obj.Namespace, t.obj.Spec.RootPassword)
	if err != nil {
		return false, err
	}
	db, err := login(oldPW)
	if err != nil {
		return false, fmt.Errorf("log in as root@%s with the OBTenant's Secret %s: %w", t.obj.Spec.TenantName, t.obj.Spec.RootPassword, err)
	}
	defer db.Close()
	ctx.Log.Info("Changing the root password", "tenant", t.obj.Spec.TenantName)
	return false, obsql.SetPassword(ctx, db, rootUser, newPW)
}

// updateSecret writes the new password into the OBTenant's rootPassword
// Secret.
func (c *TenantOperationController) updateSecret(ctx *OperationContext, seen *operationState) (bool, error) {
	t, newPW, err := passwordChange(ctx, seen)
	if err != nil {
		return false, err
	}
	s := &corev1.Secret{}
	if err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: t.obj.Namespace, Name: t.obj.Spec.RootPassword}, s); err != nil {
		return false, fmt.Errorf("get the Secret %s: %w", t.obj.Spec.RootPassword, err)
	}
	if string(s.Data["password"]) == newPW {
		return true, nil
	}
	patch := client.MergeFrom(s.DeepCopy())
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data["password"] = []byte(newPW)
	if err := ctx.Client.Patch(ctx, s, patch); err != nil {
		return false, fmt.Errorf("write the new password into the Secret %s: %w", s.Name, err)
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventPasswordChanged, "Changed the root password of %s and wrote it into the Secret %s",
		t.obj.Spec.TenantName, s.Name)
	return true, nil
}

// replayLogFlow sets how far a standby replays; done once OceanBase holds
// the point.
func (c *TenantOperationController) replayLogFlow() framework.Flow[*TenantOperation, *operationState] {
	return operationFlow(flowReplayLog,
		framework.Step[*TenantOperation, *operationState]{Name: stepRecover, Run: func(ctx *OperationContext, seen *operationState) (bool, error) {
			rl := ctx.Obj.Spec.ReplayLog
			t, err := seenTenant(seen, rl.Tenant)
			if err != nil {
				return false, err
			}
			if t.row == nil {
				return false, fmt.Errorf("OceanBase has no tenant %s", t.obj.Spec.TenantName)
			}
			until, err := build.RestoreSCN(rl.Until)
			if err != nil {
				return false, framework.InvalidSpec(err)
			}
			have, err := obsql.TenantLogRestoreSource(ctx, t.db, t.row.ID)
			if err != nil {
				return false, err
			}
			if have != nil && (have.RecoveryUntilSCN == until || until == 0 && have.RecoveryUntilSCN >= unlimitedSCN) {
				return true, nil
			}
			ctx.Log.Info("Setting the standby's recovery point", "tenant", t.obj.Spec.TenantName, "untilSCN", until)
			return false, obsql.RecoverStandby(ctx, t.db, t.obj.Spec.TenantName, until)
		}},
	)
}

// unlimitedSCN is at or below the recovery_until_scn OceanBase shows for
// UNTIL UNLIMITED (its maximum SCN, 4611686018427387903).
const unlimitedSCN = 4611686018427387903

// upgradeFlow raises a tenant's data version to the version its observers
// run. The step reads both each run: done when they are equal; while the
// observers run more than one version (the cluster's upgrade has not
// finished) it waits; otherwise it starts OceanBase's upgrade job, once,
// and polls until the tenant's compatible is the observers' version.
func (c *TenantOperationController) upgradeFlow() framework.Flow[*TenantOperation, *operationState] {
	return operationFlow(flowUpgradeTenant,
		framework.Step[*TenantOperation, *operationState]{Name: stepRunUpgradeJob, Run: c.runUpgradeJob},
	)
}

// upgradeStarted begins the operation's message once the step started
// OceanBase's upgrade job: the job is not started again.
const upgradeStarted = "the upgrade job runs"

func (c *TenantOperationController) runUpgradeJob(ctx *OperationContext, seen *operationState) (bool, error) {
	t, err := seenTenant(seen, ctx.Obj.Spec.Upgrade.Tenant)
	if err != nil {
		return false, err
	}
	if t.row == nil {
		return false, fmt.Errorf("OceanBase has no tenant %s", t.obj.Spec.TenantName)
	}
	if t.role() != obv1.TenantRolePrimary {
		return false, framework.Terminal(fmt.Errorf("the tenant %s is %s: a standby's data version follows its primary's log", t.obj.Spec.TenantName, t.role()))
	}
	servers, err := obsql.Servers(ctx, t.db)
	if err != nil {
		return false, err
	}
	op := ctx.Operation()
	target, err := obsql.ServersVersion(servers)
	if err != nil {
		op.Message = "waiting: " + err.Error()
		return false, nil
	}
	have, err := obsql.TenantDataVersion(ctx, t.db, t.row.ID)
	if err != nil {
		return false, err
	}
	switch cmp := obsql.CompareVersions(have, target); {
	case cmp == 0 && strings.HasPrefix(op.Message, upgradeStarted):
		op.Message = "upgraded to " + have
		ctx.Event(corev1.EventTypeNormal, obv1.EventTenantUpgraded, "The data version of %s is %s, its observers' version", t.obj.Spec.TenantName, have)
		return true, nil
	case cmp == 0:
		op.Message = "already at the observers' version " + have
		return true, nil
	case strings.HasPrefix(op.Message, upgradeStarted):
		return false, nil // the job runs
	case cmp > 0:
		return false, framework.Terminal(fmt.Errorf("the tenant %s has data version %s, after the observers' %s", t.obj.Spec.TenantName, have, target))
	}
	ctx.Log.Info("Upgrading the tenant", "tenant", t.obj.Spec.TenantName, "from", have, "to", target)
	if err := obsql.RunUpgradeJob(ctx, t.db, t.obj.Spec.TenantName); err != nil {
		return false, err
	}
	op.Message = fmt.Sprintf("%s from %s to %s", upgradeStarted, have, target)
	ctx.Event(corev1.EventTypeNormal, obv1.EventTenantUpgrading, "Started the upgrade of %s from data version %s to %s", t.obj.Spec.TenantName, have, target)
	return false, nil
}
