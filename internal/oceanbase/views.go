package oceanbase

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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

// Reasons of the views' Ready conditions.
const (
	ReasonNotBootstrapped    = "NotBootstrapped"
	ReasonNotInCluster       = "NotInCluster"
	ReasonZoneNotActive      = "ZoneNotActive"
	ReasonZoneServing        = "ZoneServing"
	ReasonPodMissing         = "PodMissing"
	ReasonPodNotReady        = "PodNotReady"
	ReasonServerUnknown      = "ServerUnknown"
	ReasonServerNotActive    = "ServerNotActive"
	ReasonServerNotServing   = "ServerNotServing"
	ReasonServerServing      = "ServerServing"
	ReasonClusterUnreachable = "ClusterUnreachable"
)

// applyViews applies an OBZone per zone of the spec and an OBServer per
// observer the zones' StatefulSets have (their server Services' set), and
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
	if _, err := ctx.DeleteOrphans(&obv1.OBZoneList{}); err != nil {
		return err
	}
	_, err := ctx.DeleteOrphans(&obv1.OBServerList{})
	return err
}

// watchViews makes a view created, deleted or edited start a pass of its
// cluster, which applies it again; its status writes do not, as the
// cluster does not read them.
func watchViews(b *builder.Builder) *builder.Builder {
	specOnly := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return b.Owns(&obv1.OBZone{}, specOnly).Owns(&obv1.OBServer{}, specOnly)
}

// ZoneView is the kind the zone views' controller reconciles.
type ZoneView = obv1.OBZone

// ServerView is the kind the server views' controller reconciles.
type ServerView = obv1.OBServer

// zoneViews is the OBZone actor.
type zoneViews struct{}

// serverViews is the OBServer actor.
type serverViews struct{}

func setupViews(mgr ctrl.Manager) error {
	_, err := framework.Setup(mgr, framework.Options[*ZoneView]{
		Actor: zoneViews{}, App: "obzone", PartOf: build.PartOf,
		Customize: watchClusterFor(mgr.GetClient(), build.ComponentZoneView, &obv1.OBZoneList{}),
	})
	if err != nil {
		return err
	}
	_, err = framework.Setup(mgr, framework.Options[*ServerView]{
		Actor: serverViews{}, App: "observer-view", PartOf: build.PartOf,
		Customize: watchClusterFor(mgr.GetClient(), build.ComponentServerView, &obv1.OBServerList{}),
	})
	return err
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

// viewDependency is a view's cluster, ready as soon as it exists: a view
// reports whatever state the cluster is in.
func viewDependency(cluster string) []framework.Dependency {
	return []framework.Dependency{{
		Object: &Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		Ready:  func(client.Object) (bool, string) { return true, "" },
	}}
}

// Dependencies returns the zone's cluster.
func (zoneViews) Dependencies(ctx *framework.Context[*ZoneView]) ([]framework.Dependency, error) {
	return viewDependency(ctx.Obj.Spec.Cluster), nil
}

// Declare copies the zone's state from its cluster's status.
func (zoneViews) Declare(ctx *framework.Context[*ZoneView]) error {
	z := ctx.Obj
	v := zoneView(ctx.Dependencies[0].(*Cluster), z.Spec.Zone)
	v.status.StatusCore = z.Status.StatusCore
	z.Status = v.status
	setViewReady(ctx.SetCondition, v.viewReady)
	return nil
}

func (zoneViews) Observe(*framework.Context[*ZoneView]) (framework.Action[*ZoneView], error) {
	return nil, nil
}

func (zoneViews) Finalize(*framework.Context[*ZoneView]) (bool, error) { return true, nil }

// Dependencies returns the server's cluster.
func (serverViews) Dependencies(ctx *framework.Context[*ServerView]) ([]framework.Dependency, error) {
	return viewDependency(ctx.Obj.Spec.Cluster), nil
}

// Declare copies the server's state from its cluster's status.
func (serverViews) Declare(ctx *framework.Context[*ServerView]) error {
	s := ctx.Obj
	v := serverView(ctx.Dependencies[0].(*Cluster), s.Name)
	v.status.StatusCore = s.Status.StatusCore
	s.Status = v.status
	setViewReady(ctx.SetCondition, v.viewReady)
	return nil
}

func (serverViews) Observe(*framework.Context[*ServerView]) (framework.Action[*ServerView], error) {
	return nil, nil
}

func (serverViews) Finalize(*framework.Context[*ServerView]) (bool, error) { return true, nil }

// viewReady is a view's Ready condition.
type viewReady struct {
	ready           bool
	reason, message string
}

func setViewReady(set func(string, metav1.ConditionStatus, string, string), r viewReady) {
	status := metav1.ConditionFalse
	if r.ready {
		status = metav1.ConditionTrue
	}
	set(framework.ConditionReady, status, r.reason, r.message)
}

// clusterNotServing says why a cluster's status tells nothing of its
// servers (not bootstrapped, OceanBase not answering); empty when it does.
func clusterNotServing(ob *Cluster) viewReady {
	if ob.Status.BootstrappedAt == nil {
		return viewReady{reason: ReasonNotBootstrapped, message: fmt.Sprintf("OBCluster %s is not bootstrapped yet", ob.Name)}
	}
	if r := meta.FindStatusCondition(ob.Status.Conditions, framework.ConditionReady); r != nil && r.Reason == ReasonUnreachable {
		return viewReady{reason: ReasonClusterUnreachable, message: fmt.Sprintf("OBCluster %s: %s", ob.Name, r.Message)}
	}
	return viewReady{}
}

// serving reports whether OceanBase reports s ACTIVE and serving, and its
// pod is ready.
func isServing(s obv1.OBServerStatus) bool {
	return s.Status == "ACTIVE" && s.StartServiceTime != nil && s.PodReady
}

type zoneViewResult struct {
	status obv1.OBZoneViewStatus
	viewReady
}

// zoneView is zone's view from ob's status: Ready when OceanBase reports
// the zone ACTIVE and every server of the spec's replicas serves.
func zoneView(ob *Cluster, zone string) zoneViewResult {
	var out zoneViewResult
	i := slices.IndexFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == zone })
	if i < 0 {
		out.viewReady = viewReady{reason: ReasonNotInCluster, message: fmt.Sprintf("OBCluster %s has no zone %s", ob.Name, zone)}
		return out
	}
	st := &out.status
	st.Replicas = max(ob.Spec.Zones[i].Replicas, 1)
	if j := slices.IndexFunc(ob.Status.Zones, func(z obv1.OBZoneStatus) bool { return z.Name == zone }); j >= 0 {
		zs := ob.Status.Zones[j]
		st.Status, st.Servers, st.ActiveServers = zs.Status, zs.Servers, zs.ActiveServers
	}
	var notServing []string
	serving := int32(0)
	for _, s := range ob.Status.Servers {
		if s.Zone != zone {
			continue
		}
		if s.PodReady {
			st.ReadyPods++
		}
		if isServing(s) {
			serving++
		} else {
			notServing = append(notServing, serverState(s))
		}
	}
	switch nr := clusterNotServing(ob); {
	case nr.reason != "":
		out.viewReady = nr
	case st.Status != "ACTIVE":
		out.viewReady = viewReady{reason: ReasonZoneNotActive, message: fmt.Sprintf("OceanBase reports the zone %s", orUnknown(st.Status))}
	case len(notServing) > 0:
		out.viewReady = viewReady{reason: ReasonServersNotServing, message: strings.Join(notServing, "; ")}
	case serving < st.Replicas:
		out.viewReady = viewReady{reason: ReasonServersNotServing, message: fmt.Sprintf("%d of %d servers serving", serving, st.Replicas)}
	default:
		out.viewReady = viewReady{ready: true, reason: ReasonZoneServing, message: fmt.Sprintf("ACTIVE, %d servers serving", serving)}
	}
	return out
}

type serverViewResult struct {
	status obv1.OBServerViewStatus
	viewReady
}

// serverView is pod's view from ob's status: Ready when OceanBase reports
// the server ACTIVE with a start_service_time and its pod is ready.
func serverView(ob *Cluster, pod string) serverViewResult {
	var out serverViewResult
	i := slices.IndexFunc(ob.Status.Servers, func(s obv1.OBServerStatus) bool { return s.Pod == pod })
	if i < 0 {
		out.viewReady = viewReady{reason: ReasonPodMissing, message: fmt.Sprintf("OBCluster %s has no pod %s", ob.Name, pod)}
		if nr := clusterNotServing(ob); nr.reason == ReasonNotBootstrapped {
			out.viewReady = nr
		}
		return out
	}
	s := ob.Status.Servers[i]
	out.status = obv1.OBServerViewStatus{Status: s.Status, Address: s.Address, Pod: s.Pod, PodReady: s.PodReady,
		StartServiceTime: s.StartServiceTime, BuildVersion: s.BuildVersion, Image: s.Image,
		RootService: s.Address != "" && s.Address == ob.Status.RootService}
	switch nr := clusterNotServing(ob); {
	case nr.reason != "":
		out.viewReady = nr
	case s.Status == "":
		out.viewReady = viewReady{reason: ReasonServerUnknown, message: fmt.Sprintf("OceanBase does not know server %s", orUnknown(s.Address))}
	case s.Status != "ACTIVE":
		out.viewReady = viewReady{reason: ReasonServerNotActive, message: "OceanBase reports the server " + s.Status}
	case s.StartServiceTime == nil:
		out.viewReady = viewReady{reason: ReasonServerNotServing, message: "ACTIVE, but it has not started serving"}
	case !s.PodReady:
		out.viewReady = viewReady{reason: ReasonPodNotReady, message: "the pod is not ready"}
	default:
		out.viewReady = viewReady{ready: true, reason: ReasonServerServing, message: "ACTIVE and serving since " +
			s.StartServiceTime.UTC().Format("2006-01-02T15:04:05Z")}
	}
	return out
}

// serverState says briefly why s does not serve.
func serverState(s obv1.OBServerStatus) string {
	switch {
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

// podImage is the image of p's observer container.
func podImage(p *corev1.Pod) string {
	for _, ct := range p.Spec.Containers {
		if ct.Name == build.ContainerName {
			return ct.Image
		}
	}
	return ""
}
