package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The parameter controller's RBAC, on top of the cluster controller's.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obparameters,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obparameters/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obparameters/finalizers,verbs=update

// ClusterParameter is the kind the parameter controller reconciles.
type ClusterParameter = obv1.OBParameter

// ParameterContext is the framework's pass context of an OBParameter.
type ParameterContext = framework.Context[*ClusterParameter]

// ParameterSettle is how long after setting a value the controller waits
// for every server to report it before it sets it again: OceanBase
// spreads a change to the servers in the background.
const ParameterSettle = 5 * time.Second

// staticEffective is the edit level of a parameter a server takes when it
// restarts.
const staticEffective = "STATIC_EFFECTIVE"

// ParameterController is the OBParameter actor: once the cluster is
// bootstrapped it sets the parameter with ALTER SYSTEM SET, reads it back
// on every server in scope (GV$OB_PARAMETERS), and sets it again when a
// server reports another value. It logs in through the cluster
// controller's logins, as the operator user.
type ParameterController struct {
	logins *logins
}

// NewParameterController returns a parameter controller that logs in
// through the cluster controller c's logins (nil: its own, with opts).
func NewParameterController(c *Controller, opts Options) *ParameterController {
	if c != nil {
		return &ParameterController{logins: c.logins}
	}
	return &ParameterController{logins: newLogins(opts.withDefaults())}
}

// setupParameters registers the OBParameter controller, which shares the
// cluster controller c's logins.
func setupParameters(mgr ctrl.Manager, c *Controller) error {
	_, err := framework.Setup(mgr, framework.Options[*ClusterParameter, *parameter]{
		Actor:     NewParameterController(c, c.opts),
		App:       "obparameter",
		PartOf:    build.PartOf,
		Resync:    c.opts.Resync,
		Customize: watchClusterForParameters(mgr.GetClient()),
	})
	return err
}

// watchClusterForParameters makes a change of an OBCluster (bootstrapped,
// a server added) start a pass of each of its OBParameters.
func watchClusterForParameters(r client.Reader) func(*builder.Builder) *builder.Builder {
	return func(b *builder.Builder) *builder.Builder {
		return b.Watches(&obv1.OBCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var list obv1.OBParameterList
			if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			var out []reconcile.Request
			for _, p := range list.Items {
				if p.Spec.Cluster == o.GetName() {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
				}
			}
			return out
		}))
	}
}

// Dependencies returns the parameter's cluster, which must be
// bootstrapped.
//
// It runs first in every pass that gets this far, so it also clears the
// servers' values in status: Declare writes them again from what this
// pass reads, and a pass that cannot read them (the cluster deleted, not
// bootstrapped, not answering) leaves none rather than old ones.
func (*ParameterController) Dependencies(ctx *ParameterContext) ([]framework.Dependency, error) {
	s := &ctx.Obj.Status
	s.Servers, s.Drifted, s.EditLevel = nil, 0, ""
	return bootstrappedCluster(ctx.Obj.Spec.Cluster), nil
}

// parameter is what a pass observed of an OBParameter's parameter in
// OceanBase (as cluster is of an OBCluster): Declare reads it and returns
// it, for Observe.
type parameter struct {
	db            *sql.DB
	scope, target string // obsql.SetParameterIn's; target "" with a scope: not known yet
	tenantID      int64  // with scope ScopeTenant, the tenant's id
	known         bool   // some server reports the name as a parameter of the scope's kind (a cluster's or a tenant's)
	drifted       []string
}

// Declare reads the parameter on the servers in scope into status, and
// sets Ready. A name OceanBase only knows as a tenant's parameter is an
// invalid spec. It returns what it read, for Observe; nil when OceanBase
// did not answer or the server has no address.
func (c *ParameterController) Declare(ctx *ParameterContext) (*parameter, error) {
	p := ctx.Obj
	ob := ctx.Dependencies[0].(*Cluster)
	st := &parameter{}
	switch {
	case p.Spec.Tenant != "":
		t := &Tenant{}
		if err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Tenant}, t); err != nil || t.Status.TenantID == 0 {
			ctx.SetReady(false, obv1.ReasonTenantNotFound, fmt.Sprintf("OBTenant %s has no tenant in OceanBase yet", p.Spec.Tenant))
			return nil, client.IgnoreNotFound(err)
		}
		obv1.DefaultTenant(t)
		st.scope, st.target, st.tenantID = obsql.ScopeTenant, t.Spec.TenantName, t.Status.TenantID
	case p.Spec.Zone != "":
		st.scope, st.target = obsql.ScopeZone, p.Spec.Zone
	case p.Spec.Server != "":
		st.scope = obsql.ScopeServer
		if i := slices.IndexFunc(ob.Status.Servers, func(s obv1.OBServerStatus) bool { return s.Pod == p.Spec.Server }); i >= 0 {
			st.target = ob.Status.Servers[i].Address
		}
		if st.target == "" {
			ctx.SetReady(false, obv1.ReasonServerUnknown, fmt.Sprintf("OBCluster %s has no server %s with an address", ob.Name, p.Spec.Server))
			return nil, nil
		}
	}
	db, err := operatorDB(ctx, framework.SecretReader(ctx.Client, ctx.Reader), c.logins, holderOf("OBParameter", p.UID), ob)
	var rows []obsql.ParameterRow
	if err == nil {
		rows, err = obsql.Parameter(ctx, db, p.Spec.Name)
	}
	if err != nil {
		if db != nil {
			c.logins.drop(ob.UID, db)
		}
		ctx.SetReady(false, obv1.ReasonUnreachable, err.Error())
		return nil, nil // the next pass tries again; status says why
	}
	st.db = db
	tenantScope := st.scope == obsql.ScopeTenant
	st.known = slices.ContainsFunc(rows, func(r obsql.ParameterRow) bool { return r.Tenant == tenantScope })
	switch {
	case len(rows) > 0 && !st.known && tenantScope:
		return nil, framework.InvalidSpec(fmt.Errorf("%s is a cluster parameter in OceanBase; set it without spec.tenant", p.Spec.Name))
	case len(rows) > 0 && !st.known:
		return nil, framework.InvalidSpec(fmt.Errorf("%s is a tenant's parameter in OceanBase; set spec.tenant to set it for a tenant", p.Spec.Name))
	}
	parameterStatus(p, st, rows)
	setParameterReady(ctx, st, time.Now())
	return st, nil
}

// parameterStatus writes the values of the servers in scope into status
// and records the drifted ones in st.
func parameterStatus(p *ClusterParameter, st *parameter, rows []obsql.ParameterRow) {
	s := &p.Status
	s.Servers, s.Drifted, s.EditLevel = nil, 0, ""
	for _, r := range rows {
		if r.Tenant != (st.scope == obsql.ScopeTenant) || r.Tenant && r.TenantID != st.tenantID ||
			st.scope == obsql.ScopeZone && r.Zone != st.target || st.scope == obsql.ScopeServer && r.Addr != st.target {
			continue
		}
		s.EditLevel = r.EditLevel
		s.Servers = append(s.Servers, obv1.OBParameterServer{Address: r.Addr, Zone: r.Zone, Value: r.Value})
		// Case-insensitive, as OceanBase prints booleans its own way.
		if !strings.EqualFold(r.Value, p.Spec.Value) {
			st.drifted = append(st.drifted, r.Addr+"="+r.Value)
		}
	}
	slices.SortFunc(s.Servers, func(a, b obv1.OBParameterServer) int { return strings.Compare(a.Address, b.Address) })
	slices.Sort(st.drifted)
	s.Drifted = int32(len(st.drifted))
}

// settling reports whether the controller set the spec's value less than
// ParameterSettle before now, or, for a parameter servers take when they
// restart, at all: setting it again would change nothing.
func settling(p *ClusterParameter, now time.Time) bool {
	s := p.Status
	if s.SetValue != p.Spec.Value || s.SetAt == nil {
		return false
	}
	return s.EditLevel == staticEffective || now.Sub(s.SetAt.Time) < ParameterSettle
}

func setParameterReady(ctx *ParameterContext, st *parameter, now time.Time) {
	p := ctx.Obj
	switch {
	case !st.known:
		ctx.SetReady(false, obv1.ReasonParameterDrifted, fmt.Sprintf("no server reports parameter %s yet", p.Spec.Name))
	case len(p.Status.Servers) == 0:
		ctx.SetReady(false, obv1.ReasonNoServers, fmt.Sprintf("no server of %s %s reports the parameter", strings.ToLower(st.scope), st.target))
	case len(st.drifted) == 0:
		ctx.SetCondition(framework.ConditionReady, metav1.ConditionTrue, obv1.ReasonParameterApplied,
			fmt.Sprintf("%d servers report %q", len(p.Status.Servers), p.Spec.Value))
	case settling(p, now) && p.Status.EditLevel == staticEffective:
		ctx.SetReady(false, obv1.ReasonRestartRequired, fmt.Sprintf("the servers take it when they restart; now %s", strings.Join(st.drifted, ", ")))
	case settling(p, now):
		ctx.SetReady(false, obv1.ReasonParameterApplying, "set; waiting for "+strings.Join(st.drifted, ", "))
	default:
		ctx.SetReady(false, obv1.ReasonParameterDrifted, "differs on "+strings.Join(st.drifted, ", "))
	}
}

// Observe sets the parameter when a server in scope reports another value
// (and it was not just set), or when no server knows the name (to have
// OceanBase's answer).
func (c *ParameterController) Observe(ctx *ParameterContext, st *parameter) (framework.Action[*ClusterParameter], error) {
	switch {
	case st == nil:
		return nil, nil // OceanBase did not answer, or the server has no address; status says so
	case !st.known || len(st.drifted) > 0 && !settling(ctx.Obj, time.Now()):
		return framework.Named("SetParameter", func(ctx *ParameterContext) error { return c.setParameter(ctx, st) }), nil
	}
	return nil, nil
}

// setParameter runs ALTER SYSTEM SET. OceanBase refusing a name no server
// reports makes the spec invalid, with OceanBase's message: retrying
// cannot help until the spec changes.
func (c *ParameterController) setParameter(ctx *ParameterContext, st *parameter) error {
	p := ctx.Obj
	err := obsql.SetParameterIn(ctx, st.db, p.Spec.Name, p.Spec.Value, st.scope, st.target)
	switch {
	case err != nil && !st.known && obsql.Refused(err):
		return framework.InvalidSpec(fmt.Errorf("OceanBase refuses parameter %s: %w", p.Spec.Name, err))
	case err != nil:
		return err
	case !st.known:
		return framework.InvalidSpec(fmt.Errorf("OceanBase took parameter %s but no server reports it as a parameter of this kind", p.Spec.Name))
	}
	p.Status.SetValue, p.Status.SetAt = p.Spec.Value, &metav1.Time{Time: time.Now()}
	where := "on every server"
	switch st.scope {
	case obsql.ScopeZone:
		where = "in zone " + st.target
	case obsql.ScopeServer:
		where = "on server " + st.target
	case obsql.ScopeTenant:
		where = "for tenant " + st.target
	}
	ctx.Event(corev1.EventTypeNormal, obv1.EventParameterSet, "Set %s = %q %s (it was %s)", p.Spec.Name, p.Spec.Value, where,
		strings.Join(st.drifted, ", "))
	return nil
}

// Finalize leaves the value in OceanBase, which has no unset.
func (c *ParameterController) Finalize(ctx *ParameterContext) (bool, error) {
	c.logins.release(holderOf("OBParameter", ctx.Obj.UID))
	ctx.Log.Info("The parameter keeps its value in OceanBase", "parameter", ctx.Obj.Spec.Name)
	return true, nil
}
