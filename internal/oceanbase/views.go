package oceanbase

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// OBZone and OBServer are views of a cluster's zones and observers: the
// cluster controller applies them (applyViews) and their own controllers
// copy what the cluster's status says of them into their status, so that
// they cost no second login to OceanBase.
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obzones;observers,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obzones/status;observers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obzones/finalizers;observers/finalizers,verbs=update

// ZoneView is the kind the zone views' controller reconciles.
type ZoneView = obv1.OBZone

// ServerView is the kind the server views' controller reconciles.
type ServerView = obv1.OBServer

// zoneViews is the OBZone actor.
type zoneViews struct{}

// serverViews is the OBServer actor.
type serverViews struct{}

func setupViews(mgr ctrl.Manager) error {
	_, err := framework.Setup(mgr, framework.Options[*ZoneView, framework.Nothing]{
		Actor: zoneViews{}, App: "obzone", PartOf: build.PartOf,
		Customize: watchClusterFor(mgr.GetClient(), build.ComponentZoneView, &obv1.OBZoneList{}),
	})
	if err != nil {
		return err
	}
	_, err = framework.Setup(mgr, framework.Options[*ServerView, framework.Nothing]{
		Actor: serverViews{}, App: "observer-view", PartOf: build.PartOf,
		Customize: watchClusterFor(mgr.GetClient(), build.ComponentServerView, &obv1.OBServerList{}),
	})
	return err
}

// watchViews makes a view created, deleted or edited start a pass of its
// cluster, which applies it again; its status writes do not, as the
// cluster does not read them.
func watchViews(b *builder.Builder) *builder.Builder {
	specOnly := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return b.Owns(&obv1.OBZone{}, specOnly).Owns(&obv1.OBServer{}, specOnly)
}

// watchClusterFor makes a change of an OBCluster start a pass of each of
// its views of component (list), found through their labels in the cache.
func watchClusterFor(r client.Reader, component string, list client.ObjectList) func(*builder.Builder) *builder.Builder {
	return func(b *builder.Builder) *builder.Builder {
		return b.Watches(&obv1.OBCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			ob := o.(*Cluster)
			l := list.DeepCopyObject().(client.ObjectList)
			if err := r.List(ctx, l, client.InNamespace(ob.Namespace), client.MatchingLabels(build.Selector(ob, component))); err != nil {
				return nil
			}
			items, _ := meta.ExtractList(l)
			out := make([]reconcile.Request, 0, len(items))
			for _, item := range items {
				obj := item.(client.Object)
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return out
		}))
	}
}

// applyViews applies an OBZone per zone of the spec and an OBServer per
// observer the zones' StatefulSets have (their server Services' set), and
// keeps those of a leaving zone while its StatefulSet or OceanBase has it
// (its servers may serve for as long as a tenant holds its removal); it
// deletes the views of zones and observers that are gone. Apply writes
// only when a view is new or was changed, so an idle cluster writes
// nothing.
func (c *Controller) applyViews(ctx *Context, cl *cluster) error {
	ob := ctx.Obj
	for _, zone := range ob.Spec.Zones {
		if err := ctx.Apply(build.ZoneView(ob, zone.Name), build.ComponentZoneView); err != nil {
			return err
		}
		for i := range int(cl.replicas(zone, ctx.Operation())) {
			if err := ctx.Apply(build.ServerView(ob, zone.Name, i), build.ComponentServerView); err != nil {
				return err
			}
		}
	}
	for _, zone := range cl.leavingZones(ob) {
		if err := ctx.Apply(build.ZoneView(ob, zone), build.ComponentZoneView); err != nil {
			return err
		}
		if lz := cl.leaving[zone]; lz != nil {
			for _, i := range slices.Sorted(maps.Keys(lz.pods)) {
				if err := ctx.Apply(build.ServerView(ob, zone, i), build.ComponentServerView); err != nil {
					return err
				}
			}
		}
	}
	if _, err := ctx.DeleteOrphans(&obv1.OBZoneList{}); err != nil {
		return err
	}
	_, err := ctx.DeleteOrphans(&obv1.OBServerList{})
	return err
}

// viewDependency is a view's cluster, ready as soon as it exists: a view
// reports whatever state the cluster is in.
func viewDependency(cluster string) []framework.Dependency {
	return []framework.Dependency{{
		Object: &Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		Ready:  func(client.Object) (bool, string) { return true, "" },
	}}
}

// viewDependencies returns view's cluster, or none when the view is
// garbage: its controlling cluster is gone, and the garbage collector
// deletes it. Waiting for the cluster then would say
// "WaitingForDependencies: not found" on every view, an Event each, for a
// cluster that was deleted, not awaited.
func viewDependencies(ctx context.Context, r client.Reader, view client.Object, cluster string) ([]framework.Dependency, error) {
	owner := metav1.GetControllerOf(view)
	if owner == nil || owner.Kind != "OBCluster" || owner.Name != cluster {
		return viewDependency(cluster), nil
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: view.GetNamespace(), Name: cluster}, &Cluster{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get OBCluster %s: %w", cluster, err)
	}
	return viewDependency(cluster), nil
}

// keepGarbage leaves a view whose cluster is gone as it is until the
// garbage collector deletes it: Ready as it was, so that nothing is
// written and no Event recorded.
func keepGarbage(conds []metav1.Condition, set func(string, metav1.ConditionStatus, string, string), cluster string) {
	if r := meta.FindStatusCondition(conds, framework.ConditionReady); r != nil {
		set(framework.ConditionReady, r.Status, r.Reason, r.Message)
		return
	}
	set(framework.ConditionReady, metav1.ConditionFalse, obv1.ReasonNotInCluster, fmt.Sprintf("OBCluster %s is deleted", cluster))
}

// Dependencies returns the zone's cluster.
func (zoneViews) Dependencies(ctx *framework.Context[*ZoneView]) ([]framework.Dependency, error) {
	return viewDependencies(ctx, ctx.Client, ctx.Obj, ctx.Obj.Spec.Cluster)
}

// Declare copies the zone's state from its cluster's status; Observe
// needs nothing of it.
func (zoneViews) Declare(ctx *framework.Context[*ZoneView]) (framework.Nothing, error) {
	z := ctx.Obj
	if len(ctx.Dependencies) == 0 {
		keepGarbage(z.Status.Conditions, ctx.SetCondition, z.Spec.Cluster)
		return framework.Nothing{}, nil
	}
	v := zoneView(ctx.Dependencies[0].(*Cluster), z.Spec.Zone)
	v.status.StatusCore = z.Status.StatusCore
	z.Status = v.status
	setViewReady(ctx.SetCondition, v.readyCondition)
	return framework.Nothing{}, nil
}

func (zoneViews) Observe(*framework.Context[*ZoneView], framework.Nothing) (framework.Action[*ZoneView], error) {
	return nil, nil
}

func (zoneViews) Finalize(*framework.Context[*ZoneView]) (bool, error) { return true, nil }

// Dependencies returns the server's cluster.
func (serverViews) Dependencies(ctx *framework.Context[*ServerView]) ([]framework.Dependency, error) {
	return viewDependencies(ctx, ctx.Client, ctx.Obj, ctx.Obj.Spec.Cluster)
}

// Declare copies the server's state from its cluster's status; Observe
// needs nothing of it.
func (serverViews) Declare(ctx *framework.Context[*ServerView]) (framework.Nothing, error) {
	s := ctx.Obj
	if len(ctx.Dependencies) == 0 {
		keepGarbage(s.Status.Conditions, ctx.SetCondition, s.Spec.Cluster)
		return framework.Nothing{}, nil
	}
	v := serverView(ctx.Dependencies[0].(*Cluster), s.Name)
	v.status.StatusCore = s.Status.StatusCore
	s.Status = v.status
	setViewReady(ctx.SetCondition, v.readyCondition)
	return framework.Nothing{}, nil
}

func (serverViews) Observe(*framework.Context[*ServerView], framework.Nothing) (framework.Action[*ServerView], error) {
	return nil, nil
}

func (serverViews) Finalize(*framework.Context[*ServerView]) (bool, error) { return true, nil }

// readyCondition is a Ready condition: a view's, or its cluster's
// (cluster.readiness).
type readyCondition struct {
	ready           bool
	reason, message string
}

func setViewReady(set func(string, metav1.ConditionStatus, string, string), r readyCondition) {
	status := metav1.ConditionFalse
	if r.ready {
		status = metav1.ConditionTrue
	}
	set(framework.ConditionReady, status, r.reason, r.message)
}

// clusterNotServing says why a cluster's status tells nothing of its
// servers (not bootstrapped, OceanBase not answering); empty when it does.
func clusterNotServing(ob *Cluster) readyCondition {
	if ob.Status.BootstrappedAt == nil {
		return readyCondition{reason: obv1.ReasonNotBootstrapped, message: fmt.Sprintf("OBCluster %s is not bootstrapped yet", ob.Name)}
	}
	if r := meta.FindStatusCondition(ob.Status.Conditions, framework.ConditionReady); r != nil && r.Reason == obv1.ReasonUnreachable {
		return readyCondition{reason: obv1.ReasonClusterUnreachable, message: fmt.Sprintf("OBCluster %s: %s", ob.Name, r.Message)}
	}
	return readyCondition{}
}

// isServing reports whether OceanBase reports s ACTIVE and serving, and
// its pod is ready.
func isServing(s obv1.OBServerStatus) bool {
	return s.Status == "ACTIVE" && s.StartServiceTime != nil && s.PodReady
}

type zoneViewResult struct {
	status obv1.OBZoneViewStatus
	readyCondition
}

// zoneView is zone's view from ob's status: Ready when OceanBase reports
// the zone ACTIVE and every server of the spec's replicas serves. A zone
// the spec no longer has is not Ready while it leaves: its view stays as
// long as its observers run, saying what OceanBase reports of it.
func zoneView(ob *Cluster, zone string) zoneViewResult {
	var out zoneViewResult
	i := slices.IndexFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == zone })
	j := slices.IndexFunc(ob.Status.Zones, func(z obv1.OBZoneStatus) bool { return z.Name == zone })
	if i < 0 && (j < 0 || !ob.Status.Zones[j].Leaving) {
		out.readyCondition = readyCondition{reason: obv1.ReasonNotInCluster, message: fmt.Sprintf("OBCluster %s has no zone %s", ob.Name, zone)}
		return out
	}
	st := &out.status
	if i >= 0 {
		st.Replicas = max(ob.Spec.Zones[i].Replicas, 1)
	}
	if j >= 0 {
		zs := ob.Status.Zones[j]
		st.Status, st.Servers, st.ActiveServers = zs.Status, zs.Servers, zs.ActiveServers
	}
	for _, s := range ob.Status.Servers {
		if s.Zone == zone && s.PodReady {
			st.ReadyPods++
		}
	}
	switch nr := clusterNotServing(ob); {
	case nr.reason != "":
		out.readyCondition = nr
	case i < 0:
		out.readyCondition = readyCondition{reason: obv1.ReasonZoneRemoving, message: fmt.Sprintf(
			"OBCluster %s is removing the zone; OceanBase reports it %s, %d of its %d servers serving",
			ob.Name, orUnknown(st.Status), st.ActiveServers, st.Servers)}
	default:
		out.readyCondition = zoneServes(ob, zone)
		var departing []string
		for _, s := range ob.Status.Servers {
			if s.Zone == zone && !specObserver(ob, s) {
				departing = append(departing, serverState(s)+", leaving the zone")
			}
		}
		if out.ready && len(departing) > 0 {
			out.readyCondition = readyCondition{reason: obv1.ReasonServersNotServing, message: strings.Join(departing, "; ")}
		}
	}
	return out
}

// zoneServes says whether zone of ob's spec serves, from ob's status:
// OceanBase reports it ACTIVE and each observer of its replicas serves
// (its pod ready, its server ACTIVE with a start_service_time).
func zoneServes(ob *Cluster, zone string) readyCondition {
	replicas := int32(1)
	if i := slices.IndexFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == zone }); i >= 0 {
		replicas = max(ob.Spec.Zones[i].Replicas, 1)
	}
	status := ""
	if j := slices.IndexFunc(ob.Status.Zones, func(z obv1.OBZoneStatus) bool { return z.Name == zone }); j >= 0 {
		status = ob.Status.Zones[j].Status
	}
	if status != "ACTIVE" {
		return readyCondition{reason: obv1.ReasonZoneNotActive, message: fmt.Sprintf("OceanBase reports the zone %s", orUnknown(status))}
	}
	var notServing []string
	serving := int32(0)
	for o := range int(replicas) {
		pod := build.PodName(ob, zone, o)
		i := slices.IndexFunc(ob.Status.Servers, func(s obv1.OBServerStatus) bool { return s.Pod == pod })
		switch {
		case i < 0:
			notServing = append(notServing, pod+" has no pod")
		case !isServing(ob.Status.Servers[i]):
			notServing = append(notServing, serverState(ob.Status.Servers[i]))
		default:
			serving++
		}
	}
	if len(notServing) > 0 {
		return readyCondition{reason: obv1.ReasonServersNotServing, message: strings.Join(notServing, "; ")}
	}
	return readyCondition{ready: true, reason: obv1.ReasonZoneServing, message: fmt.Sprintf("ACTIVE, %d servers serving", serving)}
}

type serverViewResult struct {
	status obv1.OBServerViewStatus
	readyCondition
}

// serverView is pod's view from ob's status: Ready when OceanBase reports
// the server ACTIVE with a start_service_time and its pod is ready.
func serverView(ob *Cluster, pod string) serverViewResult {
	var out serverViewResult
	i := slices.IndexFunc(ob.Status.Servers, func(s obv1.OBServerStatus) bool { return s.Pod == pod })
	if i < 0 {
		out.readyCondition = readyCondition{reason: obv1.ReasonPodMissing, message: fmt.Sprintf("OBCluster %s has no pod %s", ob.Name, pod)}
		if nr := clusterNotServing(ob); nr.reason == obv1.ReasonNotBootstrapped {
			out.readyCondition = nr
		}
		return out
	}
	s := ob.Status.Servers[i]
	out.status = obv1.OBServerViewStatus{Status: s.Status, Address: s.Address, Pod: s.Pod, PodReady: s.PodReady,
		StartServiceTime: s.StartServiceTime, BuildVersion: s.BuildVersion, Image: s.Image,
		RootService: s.Address != "" && s.Address == ob.Status.RootService}
	switch nr := clusterNotServing(ob); {
	case nr.reason != "":
		out.readyCondition = nr
	case s.Status == "":
		out.readyCondition = readyCondition{reason: obv1.ReasonServerUnknown, message: fmt.Sprintf("OceanBase does not know server %s", orUnknown(s.Address))}
	case s.Status != "ACTIVE":
		out.readyCondition = readyCondition{reason: obv1.ReasonServerNotActive, message: "OceanBase reports the server " + s.Status}
	case s.StartServiceTime == nil:
		out.readyCondition = readyCondition{reason: obv1.ReasonServerNotServing, message: "ACTIVE, but it has not started serving"}
	case !s.PodReady:
		out.readyCondition = readyCondition{reason: obv1.ReasonPodNotReady, message: "the pod is not ready"}
	default:
		out.readyCondition = readyCondition{ready: true, reason: obv1.ReasonServerServing, message: "ACTIVE and serving since " +
			s.StartServiceTime.UTC().Format("2006-01-02T15:04:05Z")}
	}
	return out
}

// serverState says briefly why s does not serve.
func serverState(s obv1.OBServerStatus) string {
	switch {
	case s.Status == "":
		return s.Pod + " is not a server OceanBase knows"
	case s.Status != "ACTIVE":
		return fmt.Sprintf("%s is %s", s.Pod, orUnknown(s.Status))
	case s.StartServiceTime == nil:
		return s.Pod + " has not started serving"
	}
	return s.Pod + "'s pod is not ready"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
