package oceanbase

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The recover flow and its steps, persisted in status.operation (a step's
// earlier names are in its Was).
const (
	flowRecover          = "recover"
	stepRecordLost       = "record-lost-servers"
	stepReaddress        = "readdress-observers"
	stepAddReplacements  = "add-replacements"
	stepWaitReplacements = "wait-replacements-serving"
	stepDeleteLost       = "delete-lost-servers"
	stepWaitLostDeleted  = "wait-lost-servers-deleted"
)

// StoreClaimAnnotation on an observer's Service is the UID of the volume
// claim whose store the server at the Service's address was bootstrapped
// or added with. An observer running on another claim, while OceanBase
// lists its address INACTIVE, has lost its server's store.
const StoreClaimAnnotation = "oceanbase.steward.dev/store-claim-uid"

// storeFieldOwner writes StoreClaimAnnotation, apart from the fields the
// Service's apply owns.
const storeFieldOwner = "steward-oceanbase-store"

// recoverFlow replaces the servers whose observer lost its store (its
// volume claim deleted with its pod, or its node lost with local storage).
// Such an observer starts empty at the address of a server OceanBase still
// lists: it cannot rejoin as that server, and OceanBase cannot add the
// address again while the old server is listed (docs/oceanbase.md). The
// flow records the lost server in status, gives the observer a new address
// (its Service re-created, its pod restarted), adds it as a new server of
// the zone, and once it serves deletes the lost one, whose units OceanBase
// then rebuilds on it from the other zones' replicas. Every step reads the
// pods, Services and OceanBase again, so a manager restart (ob-operator
// #141) or a pod deleted again (#482) only delays it.
func (c *Controller) recoverFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowRecover,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepRecordLost, Was: []string{"RecordLostServers"}, Run: c.recordLost},
			{Name: stepReaddress, Was: []string{"Readdress"}, Run: c.readdress},
			{Name: stepAddReplacements, Was: []string{"AddReplacements"}, Run: c.addReplacements},
			{Name: stepWaitReplacements, Was: []string{"WaitReplacementsServing"}, Run: c.waitReplacements},
			{Name: stepDeleteLost, Was: []string{"DeleteLostServers"}, Run: c.deleteLost},
			{Name: stepWaitLostDeleted, Was: []string{"WaitLostServersDeleted"}, Run: c.waitLostDeleted},
		},
		MaxAttempts: 10,
	}
}

// lostStores returns the servers whose observer lost its store: those
// status records that OceanBase still lists, and the observers of the
// spec's zones (departing ones left to the scale-in) that lost their
// store. While the zones with a serving server are not a majority it says
// why too (unrecoverable): OceanBase could not rebuild their replicas, and
// the flow does not start.
func lostStores(ob *Cluster, cl *cluster) (lost []obv1.OBLostServer, unrecoverable string) {
	for _, l := range ob.Status.LostServers {
		if cl.server(l.Address) != nil {
			lost = append(lost, l)
		}
	}
	departing := cl.departing(ob)
	for _, z := range ob.Spec.Zones {
		for _, o := range slices.Sorted(maps.Keys(cl.pods[z.Name])) {
			p := cl.pods[z.Name][o]
			addr := svcAddr(cl.svcs[p.Name])
			if slices.Contains(departing, p.Name) || !storeLost(p, cl.claims[p.Name], cl.svcs[p.Name], cl.server(addr)) ||
				slices.ContainsFunc(lost, func(l obv1.OBLostServer) bool { return l.Address == addr }) {
				continue
			}
			lost = append(lost, obv1.OBLostServer{Address: addr, Pod: p.Name, Zone: z.Name})
		}
	}
	if len(lost) == 0 {
		return nil, ""
	}
	if ok, why := majorityServes(specZones(ob), cl.servers); !ok {
		return lost, why
	}
	return lost, ""
}

// toRecover returns the servers the recover flow replaces: those that lost
// their store, none while a majority of zones is lost.
func (cl *cluster) toRecover() []obv1.OBLostServer {
	if cl.unrecoverable != "" {
		return nil
	}
	return cl.lost
}

// storeLost reports whether pod runs on another store than the one its
// server was added with: its claim is not the one recorded on its Service
// while OceanBase lists the Service's address INACTIVE. A pod restarted on
// its own claim is not (OceanBase sees its server come back), nor a server
// added before the record existed (nothing to compare), nor one OceanBase
// still reports ACTIVE (its lease has not run out).
func storeLost(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, svc *corev1.Service, srv *obsql.Server) bool {
	if pod == nil || pod.DeletionTimestamp != nil || claim == nil || svc == nil || srv == nil {
		return false
	}
	recorded := svc.Annotations[StoreClaimAnnotation]
	return recorded != "" && recorded != string(claim.UID) && srv.Status == "INACTIVE"
}

// majorityServes reports whether the zones with a serving server are a
// majority of zones, and says which serve otherwise. The flow restarts
// only observers whose server is already lost, so it never takes a
// serving server down; but with a majority of zones lost OceanBase cannot
// rebuild replicas, and nothing destructive is done.
func majorityServes(zones []string, servers map[string]obsql.Server) (bool, string) {
	serving := map[string]bool{}
	for _, s := range servers {
		if s.Serving() {
			serving[s.Zone] = true
		}
	}
	var up []string
	for _, z := range zones {
		if serving[z] {
			up = append(up, z)
		}
	}
	if 2*len(up) > len(zones) {
		return true, ""
	}
	return false, fmt.Sprintf("only %d of %d zones serve (%s): OceanBase cannot rebuild a lost server's replicas without a majority",
		len(up), len(zones), strings.Join(up, ", "))
}

// svcAddr is a Service's server address, "" before it has an IP.
func svcAddr(svc *corev1.Service) string {
	if svc == nil || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return ""
	}
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, build.RPCPort)
}

func recoverTrigger(lost []obv1.OBLostServer) string {
	var pods []string
	for _, l := range lost {
		pods = append(pods, l.Pod)
	}
	return "lost stores of " + strings.Join(pods, ", ")
}

// recordLost records the servers to recover in status.lostServers before
// anything changes, so that a restarted manager knows which addresses to
// delete once their observers have new ones.
func (c *Controller) recordLost(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	st := &ctx.Obj.Status
	for _, l := range cl.toRecover() {
		if !slices.ContainsFunc(st.LostServers, func(o obv1.OBLostServer) bool { return o.Address == l.Address }) {
			st.LostServers = append(st.LostServers, l)
			ctx.Log.Info("An observer lost its store", "pod", l.Pod, "server", l.Address, "zone", l.Zone)
			serverEvent(ctx, l.Pod, corev1.EventTypeWarning, obv1.EventStoreLost, "Observer %s lost the store of server %s; replacing the server", l.Pod, l.Address)
		}
	}
	return true, nil
}

// lostAddrs are the addresses recorded lost for pod.
func lostAddrs(ob *Cluster, pod string) []string {
	var out []string
	for _, l := range ob.Status.LostServers {
		if l.Pod == pod {
			out = append(out, l.Address)
		}
	}
	return out
}

// isLostAddr reports whether addr is the address of a lost server of any
// pod: OceanBase still lists it, so a recovering pod whose re-created
// Service got it (a freed IP, allocated again: a CI run saw one pod get
// the other's lost address) needs another.
func isLostAddr(ob *Cluster, addr string) bool {
	return slices.ContainsFunc(ob.Status.LostServers, func(l obv1.OBLostServer) bool { return l.Address == addr })
}

// recoveringPods are the pods of status.lostServers, each once, in order.
func recoveringPods(ob *Cluster) []obv1.OBLostServer {
	var out []obv1.OBLostServer
	for _, l := range ob.Status.LostServers {
		if !slices.ContainsFunc(out, func(o obv1.OBLostServer) bool { return o.Pod == l.Pod }) {
			out = append(out, l)
		}
	}
	return out
}

// readdress gives each recovering observer a new address: its Service,
// while it has a lost address, its own or another pod's (a re-created
// Service may get a freed IP again), is deleted, and Declare creates it again with a new IP on the
// next pass; then the pod, older than its Service, is restarted, so that
// its entrypoint resolves the new address. A pod whose address is already
// a server is never restarted.
func (c *Controller) readdress(ctx *Context, seen *cluster) (bool, error) {
	ob := ctx.Obj
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	done := true
	for _, l := range recoveringPods(ob) {
		svc, pod := cl.svcs[l.Pod], cl.pod(l.Pod)
		addr := svcAddr(svc)
		switch {
		case addr == "":
			done = false // Declare applies it again
		case isLostAddr(ob, addr):
			done = false
			if err := deleteWithUID(ctx, svc); err != nil {
				return false, fmt.Errorf("delete Service %s: %w", svc.Name, err)
			}
			ctx.Log.Info("Giving an observer a new address", "pod", l.Pod, "lost", addr)
		case pod != nil && pod.CreationTimestamp.Before(&svc.CreationTimestamp) && cl.server(addr) == nil:
			done = false
			if err := restart(ctx, pod); err != nil {
				return false, err
			}
		}
	}
	if op := ctx.Operation(); op != nil {
		op.Message = ""
		if !done {
			op.Message = "giving the observers that lost their store new addresses"
		}
	}
	return done, nil
}

// restart deletes pod (this very pod: a newer one is left alone), if it is
// not already terminating; the StatefulSet creates it again.
func restart(ctx *Context, pod *corev1.Pod) error {
	if pod == nil || pod.DeletionTimestamp != nil {
		return nil
	}
	if err := deleteWithUID(ctx, pod); err != nil {
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	ctx.Log.Info("Restarted an observer on its new address", "pod", pod.Name)
	return nil
}

func deleteWithUID(ctx *Context, obj client.Object) error {
	uid := obj.GetUID()
	err := ctx.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// replacement returns the recovering pod's Service and its address when
// the address is a new one, and the pod once it runs there.
func replacement(ob *Cluster, cl *cluster, pod string) (svc *corev1.Service, addr string, p *corev1.Pod) {
	svc = cl.svcs[pod]
	addr = svcAddr(svc)
	if addr == "" || isLostAddr(ob, addr) {
		return nil, "", nil
	}
	p = cl.pod(pod)
	if p != nil && (p.DeletionTimestamp != nil || p.CreationTimestamp.Before(&svc.CreationTimestamp)) {
		p = nil
	}
	return svc, addr, p
}

// addReplacements adds each recovering observer at its new address, once
// its pod is ready there: ADD SERVER only when OceanBase does not list the
// address yet (ob-operator #141), its claim recorded on its Service first.
func (c *Controller) addReplacements(ctx *Context, seen *cluster) (bool, error) {
	ob := ctx.Obj
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	var waiting []string
	for _, l := range recoveringPods(ob) {
		svc, addr, pod := replacement(ob, cl, l.Pod)
		switch {
		case cl.server(addr) != nil:
			continue
		case pod == nil || !workload.IsReady(pod) || cl.claims[l.Pod] == nil || cl.unanswered[l.Pod] != "":
			waiting = append(waiting, l.Pod) // ADD SERVER reaches it through its Service
			continue
		}
		if err := recordStore(ctx, svc, cl.claims[l.Pod]); err != nil {
			return false, err
		}
		if err := obsql.AddServer(ctx, cl.db, addr, l.Zone); err != nil {
			// The observer may run at its old address: its entrypoint
			// resolved its name before the DNS had the new Service. It
			// is not a server yet, so a restart costs nothing and
			// resolves the name again.
			ctx.Log.Info("Restarting a replacement OceanBase did not add", "pod", l.Pod, "server", addr, "error", err.Error())
			derr := client.IgnoreNotFound(ctx.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
			if derr != nil {
				return false, errors.Join(err, derr)
			}
			return false, err
		}
		ctx.Log.Info("Added a replacement server", "pod", l.Pod, "server", addr, "zone", l.Zone)
		serverEvent(ctx, l.Pod, corev1.EventTypeNormal, obv1.EventServerAdded, "Added server %s (%s) to zone %s in place of %s",
			addr, l.Pod, l.Zone, strings.Join(lostAddrs(ob, l.Pod), ", "))
	}
	setMessage(ctx, "waiting for the observers to run at their new address: ", waiting)
	return len(waiting) == 0, nil
}

// waitReplacements waits until every replacement serves. One whose store
// was lost again is left to a later recovery, so that this one can end.
func (c *Controller) waitReplacements(ctx *Context, seen *cluster) (bool, error) {
	ob := ctx.Obj
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	var waiting []string
	for _, l := range recoveringPods(ob) {
		svc, addr, _ := replacement(ob, cl, l.Pod)
		srv := cl.server(addr)
		switch {
		case srv != nil && srv.Serving():
		case storeLost(cl.pod(l.Pod), cl.claims[l.Pod], svc, srv):
			ctx.Log.Info("A replacement lost its store too; it is recovered next", "pod", l.Pod, "server", addr)
		case srv == nil:
			waiting = append(waiting, fmt.Sprintf("%s (%s, not a server)", addr, l.Pod))
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%s, %s)", addr, l.Pod, srv.Status))
		}
	}
	setMessage(ctx, "waiting for the replacement servers to serve: ", waiting)
	return len(waiting) == 0, nil
}

// serving reports whether the recovering pod's replacement serves.
func serving(ob *Cluster, cl *cluster, pod string) bool {
	_, addr, _ := replacement(ob, cl, pod)
	srv := cl.server(addr)
	return srv != nil && srv.Serving()
}

// deleteLost deletes from OceanBase each lost server whose observer serves
// again at its new address: OceanBase moves its units there, rebuilding
// them from the other zones' replicas. Only recorded lost servers are
// ever deleted, never one OceanBase is already deleting.
func (c *Controller) deleteLost(ctx *Context, seen *cluster) (bool, error) {
	ob := ctx.Obj
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	for _, l := range ob.Status.LostServers {
		srv := cl.server(l.Address)
		if srv == nil || srv.Status == "DELETING" || !serving(ob, cl, l.Pod) {
			continue
		}
		if err := obsql.DeleteServer(ctx, cl.db, l.Address, l.Zone); err != nil {
			return false, err
		}
		ctx.Log.Info("Deleting a lost server from OceanBase", "pod", l.Pod, "server", l.Address)
		serverEvent(ctx, l.Pod, corev1.EventTypeNormal, obv1.EventDeletingServer, "Deleting lost server %s (%s) from OceanBase", l.Address, l.Pod)
	}
	return true, nil
}

// waitLostDeleted waits until OceanBase no longer lists the lost servers
// it is deleting (ob-operator #84: an INACTIVE server stays listed until
// deleted), and drops them from status. A lost server whose replacement
// does not serve yet stays recorded for the next recovery.
func (c *Controller) waitLostDeleted(ctx *Context, seen *cluster) (bool, error) {
	ob := ctx.Obj
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	var kept []obv1.OBLostServer
	var waiting []string
	for _, l := range ob.Status.LostServers {
		srv := cl.server(l.Address)
		if srv == nil {
			ctx.Log.Info("OceanBase deleted a lost server", "pod", l.Pod, "server", l.Address)
			continue
		}
		kept = append(kept, l)
		if srv.Status == "DELETING" {
			waiting = append(waiting, l.Address)
		}
	}
	ob.Status.LostServers = kept
	setMessage(ctx, "OceanBase is moving the units of the lost servers: ", waiting)
	return len(waiting) == 0, nil
}

// recordStore records on svc the claim whose store its server is added
// with (StoreClaimAnnotation), before BOOTSTRAP or ADD SERVER.
func recordStore(ctx *Context, svc *corev1.Service, claim *corev1.PersistentVolumeClaim) error {
	if svc == nil || claim == nil || svc.Annotations[StoreClaimAnnotation] == string(claim.UID) {
		return nil
	}
	patch := client.MergeFrom(svc.DeepCopy())
	metav1.SetMetaDataAnnotation(&svc.ObjectMeta, StoreClaimAnnotation, string(claim.UID))
	if err := ctx.Client.Patch(ctx, svc, patch, client.FieldOwner(storeFieldOwner)); err != nil {
		return fmt.Errorf("record the store of Service %s: %w", svc.Name, err)
	}
	return nil
}

// recordStores records the stores of pods, by name, on their Services.
func recordStores(ctx *Context, cl *cluster, pods ...string) error {
	for _, p := range pods {
		if err := recordStore(ctx, cl.svcs[p], cl.claims[p]); err != nil {
			return err
		}
	}
	return nil
}

func setMessage(ctx *Context, prefix string, waiting []string) {
	if op := ctx.Operation(); op != nil {
		op.Message = ""
		if len(waiting) > 0 {
			op.Message = prefix + strings.Join(waiting, ", ")
		}
	}
}
