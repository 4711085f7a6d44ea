package matrixone

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/internal/s3"
	"github.com/stewardhq/steward/internal/systems"
)

// The controllers' RBAC, on top of the framework's (docs/design/framework.md).
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters;logsets;tnsets;cnsets;proxysets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters/status;logsets/status;tnsets/status;cnsets/status;proxysets/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters/finalizers;logsets/finalizers;tnsets/finalizers;cnsets/finalizers;proxysets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete

// Defaults of Options.
const (
	// DefaultResync is how often an in-sync set is observed again.
	DefaultResync = time.Minute
	// DefaultResyncNotReady is how often a set that is not Ready is.
	DefaultResyncNotReady = 5 * time.Second
	// DefaultProbeTimeout bounds one call to a probe: on a busy machine
	// mo-agent took 1.8 to 4.2 s to answer (its own deadline for HAKeeper
	// is 8 s), and a call cut short is an answer missed. A pass waits for
	// fresh answers half as long (viewReader), then reads the last good
	// view.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultProbeInterval is how often the probes are asked in the
	// background.
	DefaultProbeInterval = 5 * time.Second
	// DefaultMaxViewAge is the oldest view of HAKeeper the controllers act
	// on, when the probes missed their latest answers (a busy machine, a
	// log pod restarting). Six background rounds (DefaultProbeInterval),
	// so that a few missed answers stall nothing; and short against what
	// HAKeeper itself lags (it counts a store up until its heartbeat
	// timeout, minutes), while every decision also checks the pods, which
	// the API server shows as they are. Older, the view is unknown:
	// nothing that needs it (a restart, a replacement, a drain's step) is
	// done.
	DefaultMaxViewAge = 30 * time.Second
	// DefaultDrainSettle is the least time a CN drains, however soon it
	// holds no session: a proxy learns of the work state within a few
	// seconds, and until then may still send it a new session.
	DefaultDrainSettle = 15 * time.Second
)

// Options configure the MatrixOne controllers. The zero value is ready to
// use.
type Options struct {
	// Resync and ResyncNotReady: how often an in-sync set is observed
	// again, Ready or not (defaults DefaultResync, DefaultResyncNotReady).
	Resync, ResyncNotReady time.Duration
	// ProbeTimeout bounds one call to a log pod's probe (default
	// DefaultProbeTimeout); ProbeInterval is how often the probes are
	// asked in the background (default DefaultProbeInterval).
	ProbeTimeout, ProbeInterval time.Duration
	// MaxViewAge is the oldest view of HAKeeper acted on (default
	// DefaultMaxViewAge).
	MaxViewAge time.Duration
	// ProbeAddress returns the host:port of a log pod's probe given the
	// pod's IP (default: the IP and build.ProbePort). Tests point it at
	// their own server.
	ProbeAddress func(namespace, pod, ip string) string
	// Admin sets CNs' work state and counts their sessions (default
	// mosql.Client, SQL to a CN). Tests with no CN to reach stand in.
	Admin mosql.Admin
	// Snapshots takes, reads, drops and restores account snapshots
	// (default mosql.Client). Tests with no CN to reach stand in.
	Snapshots mosql.Snapshots
	// DrainSettle is the least time a CN drains (default
	// DefaultDrainSettle).
	DrainSettle time.Duration
	// ClaimDeleteBatch is how many objects one bulk delete removes when a
	// BucketClaim's prefix is emptied (default s3.DefaultBatchSize, S3's
	// most); ClaimDeleteBatches is how many bulk deletes one pass sends at
	// most (default DefaultClaimDeleteBatches), the progress recorded in
	// status between passes.
	ClaimDeleteBatch, ClaimDeleteBatches int
	// BackupGatewayImage is the image of the S3 gateway over a volume
	// claim that holds backups (default: $RELATED_IMAGE_MATRIXONE_BACKUP_GATEWAY,
	// else mov1.DefaultBackupGatewayImage).
	BackupGatewayImage string

	// views, when set, is the view reader the LogSet and store set
	// controllers share (Setup makes one), so that each log pod is asked
	// once whichever sets read its LogSet's view.
	views *viewReader
}

func (o Options) withDefaults() Options {
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.ResyncNotReady <= 0 {
		o.ResyncNotReady = DefaultResyncNotReady
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.MaxViewAge <= 0 {
		o.MaxViewAge = DefaultMaxViewAge
	}
	if o.Admin == nil {
		o.Admin = mosql.Client{}
	}
	if o.Snapshots == nil {
		o.Snapshots = mosql.Client{}
	}
	if o.DrainSettle <= 0 {
		o.DrainSettle = DefaultDrainSettle
	}
	if o.ClaimDeleteBatch <= 0 {
		o.ClaimDeleteBatch = s3.DefaultBatchSize
	}
	if o.ClaimDeleteBatches <= 0 {
		o.ClaimDeleteBatches = DefaultClaimDeleteBatches
	}
	if o.BackupGatewayImage == "" {
		o.BackupGatewayImage = cmp.Or(os.Getenv(EnvBackupGatewayImage), mov1.DefaultBackupGatewayImage)
	}
	return o
}

// System returns the MatrixOne system for the manager's registry, with its
// admission webhooks.
func System(opts Options) systems.System {
	return systems.System{
		Name:     systems.MatrixOne,
		Setup:    func(mgr ctrl.Manager) error { return Setup(mgr, opts) },
		Webhooks: SetupWebhooks,
	}
}

// Setup registers the API types and the controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := mov1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("matrixone: registering the API: %w", err)
	}
	// One view reader for the LogSet and store set controllers: every set
	// of a cluster reads its LogSet's log pods.
	opts = opts.withDefaults()
	opts.views = newViewReader(opts)
	for _, setup := range []func(ctrl.Manager) error{
		func(mgr ctrl.Manager) error { return setupLogSets(mgr, NewLogSetController(opts)) },
		NewTNSetController(opts).setup,
		NewCNSetController(opts).setup,
		NewProxySetController(opts).setup,
		func(mgr ctrl.Manager) error { return setupClusters(mgr, NewClusterController(), opts.withDefaults()) },
		func(mgr ctrl.Manager) error { return setupBucketClaims(mgr, NewBucketClaimController(opts)) },
		func(mgr ctrl.Manager) error { return setupBackupJobs(mgr, NewBackupJobController(opts)) },
		func(mgr ctrl.Manager) error { return setupBackups(mgr, NewBackupController(opts)) },
		func(mgr ctrl.Manager) error { return setupBackupSchedules(mgr, NewBackupScheduleController(opts)) },
		func(mgr ctrl.Manager) error { return setupSnapshots(mgr, NewSnapshotController(opts)) },
		func(mgr ctrl.Manager) error { return setupSnapshotRestores(mgr, NewSnapshotRestoreController(opts)) },
	} {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("matrixone: %w", err)
		}
	}
	return nil
}

// httpClient is the probes' HTTP client.
type httpClient = http.Client

// newHTTPClient is the probes' client: short dials, one idle connection per
// pod.
func newHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// Cluster is the kind the umbrella's controller reconciles.
type Cluster = mov1.MatrixOneCluster

// ClusterContext is the framework's pass context of a MatrixOneCluster.
type ClusterContext = framework.Context[*Cluster]

// ClusterController is the MatrixOneCluster actor. It makes the cluster's
// sets and passes each a change only when the sets before it in the
// rollout order are Ready: log service, CN groups, TN, proxy. The sets'
// own controllers do the rest (a LogSet restarts its stores one at a time
// behind the majority guard, a CNSet drains its CNs first), so the order
// is the whole cluster's: log stores first, as everything depends on
// them; then the CNs, which drain (their sessions move through the
// proxy) and come back on the new configuration while the TN, which
// every write needs, still runs the old one and serves; then the TN, its
// one store restarted with the CNs already current; the proxy last, as
// its restart cuts every session it carries.
type ClusterController struct {
	// admin runs the restore's statements (a global checkpoint), in the
	// background.
	admin      mosql.Admin
	background *framework.Background
}

// NewClusterController returns the MatrixOneCluster controller.
func NewClusterController() *ClusterController {
	return &ClusterController{admin: mosql.Client{}, background: framework.NewBackground()}
}

func setupClusters(mgr ctrl.Manager, c *ClusterController, opts Options) error {
	c.admin = opts.Admin
	_, err := framework.Setup(mgr, framework.Options[*Cluster, framework.Nothing]{
		Actor:             c,
		Flows:             []framework.Flow[*Cluster, framework.Nothing]{c.finishRestoreFlow()},
		App:               build.App,
		PartOf:            build.PartOf,
		Owns:              []client.Object{&mov1.LogSet{}, &mov1.TNSet{}, &mov1.CNSet{}, &mov1.ProxySet{}},
		Resync:            opts.Resync,
		ResyncNotReady:    opts.ResyncNotReady,
		ResyncNotReadyMax: framework.LongNotReadyResyncs * opts.Resync, // a cluster whose sets stay not Ready
	})
	return err
}

// Default applies the cluster's defaults; the webhook calls it too.
func (*ClusterController) Default(c *Cluster) { mov1.DefaultMatrixOneCluster(c) }

// Validate checks the image and each role's pods as its set would
// (validateRole), the shared storage (validateSharedStorage), the
// durations (not negative), the CN groups' labels, the root password
// Secret's name, the CN groups' names (groupNameClashes), and the log
// stores not below shardReplicas.
func (*ClusterController) Validate(c *Cluster) error {
	spec := field.NewPath("spec")
	errs := standard.ValidateImage(spec.Child("image"), c.Spec.Image)
	errs = append(errs, validateRole(spec.Child("logService"), build.RoleLog, &c.Spec.LogService.RoleSpec)...)
	errs = append(errs, standard.ValidateDuration(spec.Child("logService", "storeFailureTimeout"), c.Spec.LogService.StoreFailureTimeout)...)
	errs = append(errs, validateRole(spec.Child("tn"), build.RoleTN, &c.Spec.TN.RoleSpec)...)
	for i := range c.Spec.CNGroups {
		group := spec.Child("cnGroups").Index(i)
		errs = append(errs, validateRole(group, build.RoleCN, &c.Spec.CNGroups[i].RoleSpec)...)
		errs = append(errs, standard.ValidateDuration(group.Child("drainTimeout"), c.Spec.CNGroups[i].DrainTimeout)...)
		errs = append(errs, validateCNLabels(group.Child("labels"), c.Spec.CNGroups[i].Labels)...)
	}
	errs = append(errs, groupNameClashes(c)...)
	errs = append(errs, standard.ValidateObjectName(spec.Child("rootPassword"), c.Spec.RootPassword, "Secret")...)
	errs = append(errs, validateRole(spec.Child("proxy"), build.RoleProxy, &c.Spec.Proxy.RoleSpec)...)
	errs = append(errs, validateSharedStorage(spec.Child("sharedStorage"), c.Spec.SharedStorage)...)
	errs = append(errs, validateRestore(spec, c.Spec.RestoreFrom, c.Spec.SharedStorage, c.Spec.RootPassword)...)
	if l := c.Spec.LogService; l.Replicas > 0 && l.ShardReplicas > l.Replicas {
		errs = append(errs, field.Invalid(spec.Child("logService", "replicas"), l.Replicas,
			fmt.Sprintf("must not be below shardReplicas (%d): each replica of a shard lives on its own store", l.ShardReplicas)))
	}
	return errs.ToAggregate()
}

// set is one of the cluster's sets as a pass handles it.
type set struct {
	obj       framework.Object
	component string
	// spec returns the set's spec, for comparing the desired one with
	// the live one.
	spec func(framework.Object) any
}

// Declare runs on every pass: it applies the sets in rollout order, each
// new set at once (the sets wait for one another through their status)
// and each change only when every set before it is Ready; it scales the
// CN groups removed from the spec to zero (their CNs drain), then deletes
// them; it sets the status and conditions. While a restore has not
// completed it holds the proxies back. Observe reads status.sets.
func (c *ClusterController) Declare(ctx *ClusterContext) (framework.Nothing, error) {
	mc := ctx.Obj
	sets := build.Sets(mc)
	order := []set{{obj: sets.Log, component: build.ComponentClusterLog, spec: func(o framework.Object) any { return o.(*mov1.LogSet).Spec }}}
	for _, cn := range sets.CNs {
		order = append(order, set{obj: cn, component: build.ComponentClusterCN, spec: func(o framework.Object) any { return o.(*mov1.CNSet).Spec }})
	}
	order = append(order,
		set{obj: sets.TN, component: build.ComponentClusterTN, spec: func(o framework.Object) any { return o.(*mov1.TNSet).Spec }},
		set{obj: sets.Proxy, component: build.ComponentClusterProxy, spec: func(o framework.Object) any { return o.(*mov1.ProxySet).Spec }})

	// The sets' status is built aside and kept only when the pass gets
	// through them all: a pass that fails leaves the last complete list,
	// which the upgrade rules read.
	var statuses []mov1.SetStatus
	live, err := liveCNSets(ctx, sets.CNs)
	if err != nil {
		return framework.Nothing{}, err
	}
	if err := leaveReplicasToCNSets(ctx, mc, sets.CNs, live); err != nil {
		return framework.Nothing{}, err
	}
	refused := groupRefusingDowngrade(sets.CNs, live)
	held := ""
	// heldBecause is why the sets from here on keep their spec: a set
	// before them is not Ready, or a CN group refuses its version.
	heldBecause := ""
	if refused != "" {
		heldBecause = "its change waits: " + refused
	}
	for _, s := range order {
		if s.obj == sets.Proxy && clusterRestoring(mc) {
			// No client reaches a restored cluster before its restore
			// completes (finishRestoreFlow).
			statuses = append(statuses, mov1.SetStatus{Kind: "ProxySet", Name: sets.Proxy.Name,
				Reason: "created once the restore completes"})
			continue
		}
		st, waits, err := c.applyInOrder(ctx, s, heldBecause, refused != "")
		if err != nil {
			return framework.Nothing{}, err
		}
		if waits && held == "" {
			held = fmt.Sprintf("%s %s", st.Kind, st.Name)
		}
		if !st.Ready && heldBecause == "" {
			heldBecause = "its change waits for the sets before it to be Ready"
		}
		statuses = append(statuses, st)
	}
	retired, err := c.retireGroups(ctx, sets)
	if err != nil {
		return framework.Nothing{}, err
	}
	statuses = append(statuses, retired...)
	mc.Status.Sets = statuses
	if err := ctx.ApplyPodMonitor(mc.Spec.Monitoring, clusterPodMonitor(mc, sets), build.ComponentClusterMonitor); err != nil {
		return framework.Nothing{}, err
	}
	mc.Status.SQLAddress = sets.Proxy.Status.SQLAddress
	mc.Status.RootPasswordSecret = sets.Log.RootPasswordSecret()
	recordRestore(mc, sets.Log)
	c.setConditions(ctx, held, refused)
	return framework.Nothing{}, nil
}

// liveCNSets reads the CN groups' CNSets that exist, by name.
func liveCNSets(ctx *ClusterContext, cns []*mov1.CNSet) (map[string]*mov1.CNSet, error) {
	live := map[string]*mov1.CNSet{}
	for _, cn := range cns {
		l := &mov1.CNSet{}
		err := ctx.Client.Get(ctx, client.ObjectKeyFromObject(cn), l)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get CNSet %s: %w", cn.Name, err)
		default:
			live[cn.Name] = l
		}
	}
	return live, nil
}

// leaveReplicasToCNSets gives each group whose replicasFrom is CNSet the
// replicas its CNSet has (an autoscaler's): the cluster applies what is
// there, so it never undoes the autoscaler's change, and keeps ownership
// of the field, so that the CNSet keeps its count when the group goes
// back to replicasFrom Cluster until the cluster applies the group's. The
// count is read from the API server, not the cache, which may not have
// the autoscaler's last write yet; what is left is an autoscaler's write
// in the moment between this read and the apply, undone once (the
// autoscaler writes it again at its next sync). A new CNSet is created
// with the group's replicas.
func leaveReplicasToCNSets(ctx *ClusterContext, mc *Cluster, cns []*mov1.CNSet, live map[string]*mov1.CNSet) error {
	for i, cn := range cns {
		if _, ok := live[cn.Name]; !ok || mc.Spec.CNGroups[i].ReplicasFrom != mov1.ReplicasFromCNSet {
			continue
		}
		fresh := &mov1.CNSet{}
		if err := ctx.Reader.Get(ctx, client.ObjectKeyFromObject(cn), fresh); err != nil {
			return fmt.Errorf("read CNSet %s's replicas: %w", cn.Name, client.IgnoreNotFound(err))
		}
		if fresh.Spec.Replicas != nil {
			cn.Spec.Replicas = ptr.To(*fresh.Spec.Replicas)
		}
	}
	return nil
}

// groupRefusingDowngrade says which CN group the desired sets would give
// an older version than it has (cnDowngrade), and why it keeps its own;
// "" when none. Then no set is given its change, so that nothing goes on
// with a rollback the CNs cannot follow.
func groupRefusingDowngrade(cns []*mov1.CNSet, live map[string]*mov1.CNSet) string {
	for _, cn := range cns {
		if l, ok := live[cn.Name]; ok {
			if why := cnDowngrade(l, cn); why != "" {
				return "CNSet " + cn.Name + " " + why
			}
		}
	}
	return ""
}

// applyInOrder applies s when it is new (unless holdNew), when its spec
// is the desired one already, or when nothing holds it (heldBecause, its
// status' reason when it does), and returns its status, and whether a
// change to it waits. holdNew keeps a new set from being created: while a
// CN group refuses a downgrade, a new group would start on the older
// version.
func (c *ClusterController) applyInOrder(ctx *ClusterContext, s set, heldBecause string, holdNew bool) (_ mov1.SetStatus, waits bool, _ error) {
	kind := kindOf(s.obj)
	st := mov1.SetStatus{Kind: kind, Name: s.obj.GetName()}
	live := s.obj.DeepCopyObject().(framework.Object)
	err := ctx.Client.Get(ctx, client.ObjectKeyFromObject(s.obj), live)
	switch {
	case apierrors.IsNotFound(err) && holdNew:
		st.Reason = heldBecause
		return st, true, nil
	case apierrors.IsNotFound(err):
	case err != nil:
		return st, false, fmt.Errorf("get %s %s: %w", kind, s.obj.GetName(), err)
	case heldBecause != "" && !equality.Semantic.DeepEqual(s.spec(live), s.spec(s.obj)):
		// Held back: the live set keeps its spec.
		st.Image, st.Reason = setImage(live), heldBecause
		return st, true, nil
	}
	if err := ctx.Apply(s.obj, s.component); err != nil {
		return st, false, err
	}
	st.Image = setImage(s.obj)
	st.Ready, st.Reason = framework.IsReady(s.obj)
	if !st.Ready {
		if cond := meta.FindStatusCondition(s.obj.StatusCore().Conditions, framework.ConditionReady); cond != nil && cond.Message != "" {
			st.Reason += ": " + cond.Message
		}
	}
	return st, false, nil
}

// retireGroups scales each CNSet of a group no longer in the spec to zero
// (its CNs drain before they go), and deletes it once it is Ready with no
// CN. It returns the status of those still draining.
func (c *ClusterController) retireGroups(ctx *ClusterContext, sets build.ClusterSets) ([]mov1.SetStatus, error) {
	list := &mov1.CNSetList{}
	if err := ctx.Client.List(ctx, list, client.InNamespace(ctx.Obj.Namespace), client.MatchingLabels(ctx.Selector(build.ComponentClusterCN))); err != nil {
		return nil, fmt.Errorf("list the CN groups: %w", err)
	}
	var retired []mov1.SetStatus
	kept := map[string]bool{}
	for _, cn := range sets.CNs {
		kept[cn.Name] = true
	}
	for i := range list.Items {
		cn := &list.Items[i]
		if kept[cn.Name] || !metav1.IsControlledBy(cn, ctx.Obj) || !cn.DeletionTimestamp.IsZero() {
			continue
		}
		if ready, _ := framework.IsReady(cn); ready && ptr.Deref(cn.Spec.Replicas, 1) == 0 && cn.Status.ReadyReplicas == 0 {
			if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, cn, client.Preconditions{UID: &cn.UID})); err != nil {
				return nil, fmt.Errorf("delete the retired CN group %s: %w", cn.Name, err)
			}
			ctx.Log.Info("Deleted a retired CN group", "cnset", cn.Name)
			continue
		}
		retiring := &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: cn.Namespace, Name: cn.Name}, Spec: *cn.Spec.DeepCopy()}
		retiring.Spec.Replicas = ptr.To[int32](0)
		if err := ctx.Apply(retiring, build.ComponentClusterCN); err != nil {
			return nil, err
		}
		// Its image counts for the upgrade rules while its CNs run.
		retired = append(retired, mov1.SetStatus{Kind: "CNSet", Name: cn.Name, Image: cn.Spec.Image,
			Reason: "retired from the spec: its CNs drain, then it is deleted"})
	}
	return retired, nil
}

// setConditions sets Ready and Progressing from the sets' status: Ready
// when every set is Ready at its generation and no change waits; neither
// while a CN group refuses the version it would be given (refused).
func (c *ClusterController) setConditions(ctx *ClusterContext, held, refused string) {
	if refused != "" {
		message := refused + "; set spec.image back to a version no older"
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, mov1.ReasonDowngradeRefused, message)
		ctx.SetReady(false, mov1.ReasonDowngradeRefused, message)
		return
	}
	for _, s := range ctx.Obj.Status.Sets {
		if s.Ready {
			continue
		}
		message := fmt.Sprintf("%s %s: %s", s.Kind, s.Name, s.Reason)
		reason := mov1.ReasonSetsNotReady
		if held != "" {
			reason, message = mov1.ReasonRollingOut, message+"; the change to "+held+" waits for it"
		}
		switch {
		case clusterRestoring(ctx.Obj):
			reason = mov1.ReasonRestoring
		case neverReady(ctx.Obj):
			reason = commonv1.ReasonCreating
		}
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
		ctx.SetReady(false, reason, message)
		return
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, commonv1.ReasonStable, "")
	ctx.SetReady(true, mov1.ReasonSetsReady, fmt.Sprintf("%d sets Ready", len(ctx.Obj.Status.Sets)))
}

// Observe has nothing to do but finish a restore: the sets act.
func (*ClusterController) Observe(ctx *ClusterContext, _ framework.Nothing) (framework.Action[*Cluster], error) {
	if readyToFinishRestore(ctx.Obj) {
		return framework.StartFlow[*Cluster](flowFinishRestore, "restoreFrom "+ctx.Obj.Spec.RestoreFrom.Backup), nil
	}
	return nil, nil
}

// Finalize has nothing to clean: owner references take the sets, whose
// controllers apply their volumes' reclaim policies.
func (*ClusterController) Finalize(*ClusterContext) (bool, error) { return true, nil }

// clusterPodMonitor is the cluster's PodMonitor, named after it: every
// pod of its sets (by their instance label), at the metrics port.
func clusterPodMonitor(mc *Cluster, sets build.ClusterSets) *unstructured.Unstructured {
	instances := []string{sets.Log.Name, sets.TN.Name, sets.Proxy.Name}
	for _, cn := range sets.CNs {
		instances = append(instances, cn.Name)
	}
	slices.Sort(instances)
	return framework.PodMonitor(mc.Namespace, mc.Name, map[string]string{standard.LabelName: build.App},
		standard.LabelInstance, instances, build.PortNameMetrics, nil)
}

// setImage is a set's spec.image.
func setImage(obj framework.Object) string { return obj.(mov1.PodSetter).PodSet().Image }

func kindOf(obj framework.Object) string {
	switch obj.(type) {
	case *mov1.LogSet:
		return "LogSet"
	case *mov1.TNSet:
		return "TNSet"
	case *mov1.CNSet:
		return "CNSet"
	}
	return "ProxySet"
}
