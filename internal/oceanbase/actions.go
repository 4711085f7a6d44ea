package oceanbase

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// addServers adds to OceanBase the observers whose pods are ready and
// that it does not know (ADD SERVER, zone by the pod's), each one's volume
// claim recorded on its Service first (recover.go).
func (c *Controller) addServers(ctx *Context, seen *cluster) error {
	cl, err := connected(seen)
	if err != nil {
		return err
	}
	missing := cl.missingServers()
	for _, pod := range slices.Sorted(maps.Keys(missing)) {
		if err := recordStores(ctx, cl, pod); err != nil {
			return err
		}
		if err := obsql.AddServer(ctx, cl.db, cl.addr(pod), missing[pod]); err != nil {
			return err
		}
		ctx.Log.Info("Added a server", "pod", pod, "server", cl.addr(pod), "zone", missing[pod])
		serverEvent(ctx, pod, corev1.EventTypeNormal, obv1.EventServerAdded, "Added server %s (%s) to zone %s", cl.addr(pod), pod, missing[pod])
	}
	return nil
}

// serverEvent records an Event on the cluster about the observer of pod,
// its related object: a server's Events are its own, whatever another
// server's of the same reason say at the same moment (a scale-out adding
// two servers in one pass records two ServerAdded Events).
func serverEvent(ctx *Context, pod, eventType, reason, format string, args ...any) {
	observer := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ctx.Obj.Namespace, Name: pod}}
	ctx.EventAbout(observer, eventType, reason, format, args...)
}

// setParameters sets the spec's parameters that drifted.
func (c *Controller) setParameters(ctx *Context, seen *cluster) error {
	cl, err := connected(seen)
	if err != nil {
		return err
	}
	drifted := map[string]bool{}
	for _, d := range ctx.Obj.Status.ParameterDrift {
		drifted[d.Name] = true
	}
	for _, p := range ctx.Obj.Spec.Parameters {
		if !drifted[p.Name] {
			continue
		}
		if err := obsql.SetParameter(ctx, cl.db, p.Name, p.Value); err != nil {
			return framework.Terminal(err) // a name or value OceanBase refuses stays refused
		}
		ctx.Log.Info("Set a parameter", "parameter", p.Name, "value", p.Value)
	}
	return nil
}
