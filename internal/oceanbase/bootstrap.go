package oceanbase

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The bootstrap flow and its steps, persisted in status.operation (a
// step's earlier names are in its Was).
const (
	flowBootstrap     = "bootstrap"
	stepBootstrap     = "bootstrap-first-observers"
	stepCreateUsers   = "create-users"
	stepAddServers    = "add-servers"
	stepSetParameters = "set-parameters"
	operatorUser      = "operator"
	rootUser          = "root"
	bootstrapTimeout  = 30 * time.Minute
)

// bootstrapFlow bootstraps a new cluster: BOOTSTRAP with the first
// observer of each zone, the users (the operator's, then root's password),
// the other observers added, the parameters set.
func (c *Controller) bootstrapFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowBootstrap,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepBootstrap, Was: []string{"Bootstrap"}, Run: c.runBootstrap},
			{Name: stepCreateUsers, Was: []string{"CreateUsers"}, Run: c.createUsers},
			{Name: stepAddServers, Was: []string{"AddServers"}, Run: c.addServersStep},
			{Name: stepSetParameters, Was: []string{"SetParameters"}, Run: c.setParametersStep},
		},
		MaxAttempts: 20,
	}
}

// runBootstrap sends ALTER SYSTEM BOOTSTRAP, which takes minutes on
// OceanBase: the statement runs in the background and the step polls it.
// It is idempotent: a cluster whose servers already answer as
// bootstrapped (the manager stopped after sending it) is recorded as such,
// and a statement still running is waited for, not sent again.
func (c *Controller) runBootstrap(ctx *Context, cl *cluster) (bool, error) {
	ob := ctx.Obj
	if !cl.seedsReady(ob) {
		return false, nil
	}
	var members []obsql.BootstrapMember
	for _, z := range ob.Spec.Zones {
		members = append(members, obsql.BootstrapMember{Zone: z.Name, Addr: cl.addr(build.PodName(ob, z.Name, 0))})
	}
	seed := c.opts.Resolve(cl.ips[build.PodName(ob, ob.Spec.Zones[0].Name, 0)])
	if done, err := c.bootstrapped(ctx, cl); done || err != nil {
		return done, err
	}
	switch state, err := c.bootstrap.Poll(ob.UID); {
	case state == framework.RunRunning:
		return false, nil
	case state == framework.RunFinished && err == nil:
		c.markBootstrapped(ctx)
		return true, nil
	case state == framework.RunFinished:
		return false, fmt.Errorf("bootstrap: %w", err)
	}
	var seeds []string
	for _, z := range ob.Spec.Zones {
		seeds = append(seeds, build.PodName(ob, z.Name, 0))
	}
	if err := recordStores(ctx, cl, seeds...); err != nil {
		return false, err
	}
	ctx.Log.Info("Bootstrapping", "servers", members)
	c.bootstrap.Start(ob.UID, bootstrapTimeout, func(bg context.Context) error {
		db, err := obsql.Open(bg, seed, obsql.Login{User: rootUser}, bootstrapTimeout)
		if err != nil {
			return err
		}
		defer db.Close()
		return obsql.Bootstrap(bg, db, members)
	})
	return false, nil
}

// bootstrapped reports whether the seed observers already form a cluster:
// root logs in (with no password yet, or with its Secret's) and reads the
// servers.
func (c *Controller) bootstrapped(ctx *Context, cl *cluster) (bool, error) {
	ob := ctx.Obj
	rootPW, err := framework.ReadPassword(ctx, framework.SecretReader(ctx.Client, ctx.Reader), ob.Namespace, ob.Spec.Credentials.Root)
	if err != nil {
		return false, err
	}
	for _, pw := range []string{"", rootPW} {
		db, err := c.logins.connect(ctx, cl.hosts(), obsql.Login{User: rootUser, Password: pw})
		if err != nil {
			continue
		}
		_, err = obsql.Servers(ctx, db)
		db.Close()
		if err == nil {
			c.markBootstrapped(ctx)
			return true, nil
		}
	}
	return false, nil
}

func (c *Controller) markBootstrapped(ctx *Context) {
	if ctx.Obj.Status.BootstrappedAt == nil {
		now := metav1.Now()
		ctx.Obj.Status.BootstrappedAt = &now
		ctx.Event("Normal", obv1.ReasonBootstrapped, "Bootstrapped OceanBase cluster %s", ctx.Obj.Spec.ClusterName)
	}
}

// createUsers creates the operator's user with its Secret's password and
// sets root's password. Root logs in without a password until the last
// statement, and with its Secret's afterwards, so the step can run again.
func (c *Controller) createUsers(ctx *Context, cl *cluster) (bool, error) {
	ob := ctx.Obj
	rootPW, err := framework.ReadPassword(ctx, framework.SecretReader(ctx.Client, ctx.Reader), ob.Namespace, ob.Spec.Credentials.Root)
	if err != nil {
		return false, err
	}
	operatorPW, err := framework.ReadPassword(ctx, framework.SecretReader(ctx.Client, ctx.Reader), ob.Namespace, ob.Spec.Credentials.Operator)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, pw := range []string{"", rootPW} {
		db, err := c.logins.connect(ctx, cl.hosts(), obsql.Login{User: rootUser, Password: pw})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = obsql.EnsureUser(ctx, db, operatorUser, operatorPW, "ALL PRIVILEGES")
		if err == nil {
			err = obsql.SetPassword(ctx, db, rootUser, rootPW)
		}
		db.Close()
		return err == nil, err
	}
	return false, fmt.Errorf("log in as root: %w", errors.Join(errs...))
}

// addServersStep adds the other observers that run; those that come later
// are added by Observe.
func (c *Controller) addServersStep(ctx *Context, seen *cluster) (bool, error) {
	err := c.addServers(ctx, seen)
	return err == nil, err
}

func (c *Controller) setParametersStep(ctx *Context, seen *cluster) (bool, error) {
	return true, c.setParameters(ctx, seen)
}
