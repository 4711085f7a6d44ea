package zookeeper

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// The controller's RBAC, on top of the framework's (docs/design/framework.md).
//
// +kubebuilder:rbac:groups=zookeeper.steward.dev,resources=zookeeperclusters,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=zookeeper.steward.dev,resources=zookeeperclusters/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=zookeeper.steward.dev,resources=zookeeperclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions;replicasets;deployments;daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;configmaps;secrets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;update;delete

// Cluster is the kind this controller reconciles.
type Cluster = zkv1.ZookeeperCluster

// Context is the framework's pass context of a ZookeeperCluster.
type Context = framework.Context[*Cluster]

// Action is an imperative step Observe returns.
type Action = framework.Action[*Cluster]

// Defaults of Options.
const (
	// DefaultResync is a safety net: the background probes enqueue a
	// cluster whose servers' answers change, and watches the rest. Each
	// pass costs about 8 ms of CPU: at 15 s, a thousand idle clusters kept
	// half a core busy (bench/scale).
	DefaultResync        = time.Minute
	DefaultProbeTimeout  = 2 * time.Second
	DefaultProbeDeadline = 3 * time.Second
	// DefaultProbeInterval is how often each server is asked in the
	// background while it answers.
	DefaultProbeInterval = 10 * time.Second
	// probeRetryInterval is how soon a server that did not serve is asked
	// again (doubling while it keeps not serving). A survivor of a heal
	// serves again once its replacements form a quorum, without its pod
	// changing: at an interval's wait, Ready came 10 s after the third pod
	// was ready in 2 of 9 heals (bench/zookeeper); it comes 0-3 s after
	// its replacements serve.
	probeRetryInterval = 500 * time.Millisecond
	// DefaultReconfigTimeout bounds one membership read or change.
	DefaultReconfigTimeout = 15 * time.Second
)

// Options configure the ZooKeeper controller. The zero value is ready to
// use.
type Options struct {
	// ClusterDomain is the cluster's DNS domain, in the servers' addresses
	// (default build.DefaultClusterDomain).
	ClusterDomain string
	// Resync is how often an in-sync cluster is observed again, to notice
	// what Kubernetes does not report: a new leader, a server that stopped
	// serving (default DefaultResync).
	Resync time.Duration
	// ProbeTimeout bounds one AdminServer call; ProbeDeadline bounds how
	// long a pass that runs an operation waits for fresh answers, so that a
	// hung server never holds such a pass up longer (defaults
	// DefaultProbeTimeout, DefaultProbeDeadline). Other passes never wait.
	ProbeTimeout, ProbeDeadline time.Duration
	// ProbeInterval is how often each server is asked in the background
	// while it answers; one that does not is asked again after half a
	// second (probeRetryInterval), then less and less often, down to once
	// every three intervals (once it has not answered for minutes, every
	// tenth of that time, up to probe.DefaultLongFailureMaxInterval),
	// and at once when its pod changes (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// ReconfigTimeout bounds a membership read or change through the
	// client port (default DefaultReconfigTimeout).
	ReconfigTimeout time.Duration
	// OperatorNamespace is where Steward's pods run, which the servers'
	// NetworkPolicy admits (default framework.OperatorNamespace(); empty:
	// any namespace).
	OperatorNamespace string
}

func (o Options) withDefaults() Options {
	if o.ClusterDomain == "" {
		o.ClusterDomain = build.DefaultClusterDomain
	}
	if o.OperatorNamespace == "" {
		o.OperatorNamespace = framework.OperatorNamespace()
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.ProbeDeadline <= 0 {
		o.ProbeDeadline = DefaultProbeDeadline
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.ReconfigTimeout <= 0 {
		o.ReconfigTimeout = DefaultReconfigTimeout
	}
	return o
}

// Controller is the ZookeeperCluster actor: Declare, Observe and Finalize,
// plus the scale and rolling-restart flows.
type Controller struct {
	opts  Options
	http  *http.Client
	stats *probe.Collector[zkclient.Observation]
	// trigger enqueues a cluster when a server's answer changed.
	trigger *framework.Trigger

	mu sync.Mutex
	// zxidsAt is when each cluster's zxids in status were last refreshed.
	zxidsAt map[types.UID]time.Time
	// sent is the membership change each cluster's scale step sent last,
	// until a later run reads its outcome (reportLostReply).
	sent map[types.UID]memberChange
	// commits is each cluster's last committed membership change
	// (membersCommitted).
	commits map[types.UID]memberCommit
}

// New returns a controller with opts.
func New(opts Options) *Controller {
	opts = opts.withDefaults()
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: opts.ProbeTimeout}).DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	trigger := framework.NewTrigger()
	return &Controller{
		opts:    opts,
		http:    &http.Client{Transport: transport, Timeout: opts.ProbeTimeout},
		trigger: trigger,
		stats: probe.NewCollector(probe.Options[zkclient.Observation]{
			Kind:          "ZookeeperCluster",
			CallTimeout:   opts.ProbeTimeout,
			Deadline:      opts.ProbeDeadline,
			MinInterval:   time.Second,
			Interval:      opts.ProbeInterval,
			RetryInterval: min(probeRetryInterval, opts.ProbeInterval),
			MaxInterval:   3 * opts.ProbeInterval,
			Changed:       observationChanged,
			Notify:        trigger.Enqueue,
		}),
		zxidsAt: map[types.UID]time.Time{},
		sent:    map[types.UID]memberChange{},
		commits: map[types.UID]memberCommit{},
	}
}

// System returns the ZooKeeper system for the manager's registry, with its
// admission webhooks (SetupWebhooks).
func System(opts Options) systems.System {
	return systems.System{
		Name:     systems.ZooKeeper,
		Setup:    func(mgr ctrl.Manager) error { return Setup(mgr, opts) },
		Webhooks: SetupWebhooks,
	}
}

// Setup registers the API types and the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := zkv1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("zookeeper: registering the API: %w", err)
	}
	c := New(opts)
	_, err := framework.Setup(mgr, framework.Options[*Cluster, *ensemble]{
		Actor:  c,
		App:    build.App,
		PartOf: build.PartOf,
		Owns: []client.Object{
			&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{},
			&policyv1.PodDisruptionBudget{},
		},
		Flows:  []framework.Flow[*Cluster, *ensemble]{c.scaleFlow(), c.restartFlow()},
		Resync: c.opts.Resync,
		// An ensemble that stays without quorum (unreachable) is observed
		// less and less often; its probes start a pass on any answer.
		ResyncNotReadyMax: framework.LongNotReadyResyncs * c.opts.Resync,
		Trigger:           c.trigger,
		Customize:         watchServers,
	})
	if err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

// watchServers adds a watch on the servers' pods, which the StatefulSet
// owns: a pod that becomes ready or goes away starts a pass of its cluster.
func watchServers(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Pod{}, workload.EnqueueOwnerByLabels(build.App, build.ComponentServer))
}

// Default applies the API's defaults, zkv1.Default: the defaulting webhook
// calls it too.
func (*Controller) Default(zk *Cluster) { zkv1.Default(zk) }

// Validate checks the defaulted spec for what the CRD's schema cannot: the
// validating webhook rejects what it rejects, and the controller calls it
// every pass, so that a cluster admitted without webhooks (or before a
// rule existed) is reported InvalidSpec instead of acted on. It returns a
// field.ErrorList's aggregate: each error names its field.
//
//   - spec.config: no key the operator owns (CEL checks the same on
//     admission; kept here for objects the schema never saw);
//   - spec.heap: a size ParseHeap reads (the pattern admits sizes too large
//     to count in bytes);
//   - spec.resources.limits.memory, when set, above the heap: the JVM needs
//     memory beyond its heap, and the kernel OOM-kills a container that
//     reaches its limit, so a server would crash-loop;
//   - spec.resources.requests.memory, when set, not below the heap: the
//     scheduler would place the server on a node that cannot hold its heap;
//   - each request no greater than its limit: Kubernetes rejects such pods,
//     and the StatefulSet would never be applied;
//   - spec.image: a container image reference (the API server takes any
//     text; the kubelet would not start the pod);
//   - spec.clientService.nodePort in the cluster's node port range (a dry
//     run of the Service does not check it);
//   - spec.config: the values of the settings ZooKeeper reads as numbers or
//     booleans (configTypes) parse as such.
//
// What the API server checks on the children (node selectors,
// tolerations, quantities, annotations, ...) it checks itself, on the
// children RenderChildren renders.
func (*Controller) Validate(zk *Cluster) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(zk.Spec.Config)) {
		if zkv1.IsOperatorOwnedConfigKey(k) {
			errs = append(errs, field.Forbidden(spec.Child("config").Key(k), "the operator owns this key"))
		}
	}
	errs = append(errs, standard.ValidateSettings(spec.Child("config"), zk.Spec.Config, configTypes)...)
	errs = append(errs, standard.ValidateImage(spec.Child("image"), zk.Spec.Image)...)
	if p := zk.Spec.ClientService.NodePort; p != nil {
		errs = append(errs, standard.ValidateNodePort(spec.Child("clientService", "nodePort"), *p)...)
	}
	res := zk.Spec.Resources
	requests, limits := spec.Child("resources", "requests"), spec.Child("resources", "limits")
	errs = append(errs, standard.ValidateResources(spec.Child("resources"), res)...)
	heapBytes, err := zkv1.ParseHeap(zk.Spec.Heap)
	if err != nil {
		return append(errs, field.Invalid(spec.Child("heap"), zk.Spec.Heap, err.Error())).ToAggregate()
	}
	heap := resource.NewQuantity(heapBytes, resource.BinarySI)
	if limit, ok := res.Limits[corev1.ResourceMemory]; ok && limit.Cmp(*heap) <= 0 {
		errs = append(errs, field.Invalid(limits.Child("memory"), limit.String(), fmt.Sprintf(
			"must exceed spec.heap (%s): the JVM needs memory beyond its heap, and is OOM-killed at the limit", zk.Spec.Heap)))
	}
	if request, ok := res.Requests[corev1.ResourceMemory]; ok && request.Cmp(*heap) < 0 {
		errs = append(errs, field.Invalid(requests.Child("memory"), request.String(), fmt.Sprintf(
			"must not be below spec.heap (%s): the server would be scheduled where its heap does not fit; unset, it defaults to the heap plus %s",
			zk.Spec.Heap, resource.NewQuantity(zkv1.JVMMemoryOverhead, resource.BinarySI))))
	}
	return errs.ToAggregate()
}

// configTypes are the settings of spec.config that ZooKeeper parses as
// numbers or booleans (its administrator's guide); a value that does not
// parse would stop every server at start. Other keys are passed through.
var configTypes = map[string]standard.SettingType{
	"tickTime":                      standard.SettingInteger,
	"initLimit":                     standard.SettingInteger,
	"syncLimit":                     standard.SettingInteger,
	"maxClientCnxns":                standard.SettingInteger,
	"maxCnxns":                      standard.SettingInteger,
	"minSessionTimeout":             standard.SettingInteger,
	"maxSessionTimeout":             standard.SettingInteger,
	"snapCount":                     standard.SettingInteger,
	"preAllocSize":                  standard.SettingInteger,
	"globalOutstandingLimit":        standard.SettingInteger,
	"connectToLearnerMasterLimit":   standard.SettingInteger,
	"fsync.warningthresholdms":      standard.SettingInteger,
	"autopurge.snapRetainCount":     standard.SettingInteger,
	"autopurge.purgeInterval":       standard.SettingInteger,
	"syncEnabled":                   standard.SettingBoolean,
	"localSessionsEnabled":          standard.SettingBoolean,
	"localSessionsUpgradingEnabled": standard.SettingBoolean,
	"quorum.auth.enableSasl":        standard.SettingBoolean,
	"forceSync":                     standard.SettingYesNo,
	"skipACL":                       standard.SettingYesNo,
}

// Declare runs on every pass, flows included (framework.Declarer): it
// applies the credentials, the Services, the PodDisruptionBudget and the
// NetworkPolicy spec.networkPolicy asks for,
// observes the ensemble into status, applies the members ConfigMap and the
// StatefulSet for the membership it found and the size a scale flow holds
// (with the server it is adding), collects superseded configuration, and sets the conditions. It
// returns the ensemble for Observe and the flow steps of the same pass.
func (c *Controller) Declare(ctx *Context) (*ensemble, error) {
	zk := ctx.Obj
	if _, err := c.credentials(ctx); err != nil {
		return nil, err
	}
	for _, child := range []struct {
		obj       client.Object
		component string
	}{
		{build.HeadlessService(zk), build.ComponentHeadless},
		{build.ClientService(zk), build.ComponentClient},
		{build.PodDisruptionBudget(zk), build.ComponentServer},
	} {
		if err := ctx.Apply(child.obj, child.component); err != nil {
			return nil, err
		}
	}
	np := build.NetworkPolicy(zk, framework.OperatorPeer(c.opts.OperatorNamespace))
	if err := ctx.ApplyNetworkPolicy(zk.Spec.NetworkPolicy, np, build.ComponentServer); err != nil {
		return nil, err
	}
	e, err := c.observe(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.settleMembers(ctx, e); err != nil {
		return nil, err
	}
	e.created = e.sts == nil
	replicas, joining := desiredServers(zk, e, ctx.Operation())
	if e.sts, err = c.applyServers(ctx, replicas, e.members, joining); err != nil {
		return nil, err
	}
	if _, err := ctx.CollectConfigMaps(build.ComponentConfig); err != nil {
		return nil, err
	}
	c.setConditions(ctx, e)
	return e, nil
}

// settleMembers makes sure e has a membership to write: a new cluster's
// bootstrap members, or, when no leader answers and status lost them, the
// members the members ConfigMap recorded.
func (c *Controller) settleMembers(ctx *Context, e *ensemble) error {
	if len(e.members) > 0 {
		return nil
	}
	var err error
	if e.sts == nil {
		// A new cluster: its servers are members from the start, but for
		// departed members' volumes left by an earlier incarnation.
		// (Without a StatefulSet but with a leader answering, its pods
		// were orphaned: the leader's membership is kept.)
		e.members, err = c.bootstrapMembers(ctx)
		e.bootstrap = true
	} else {
		// No leader answers and status has no members although the
		// StatefulSet exists: never write an empty membership.
		e.members, err = c.recoverMembers(ctx, e)
	}
	if err != nil {
		return err
	}
	ctx.Obj.Status.Members = toInt32(e.members)
	return nil
}

// desiredServers returns the StatefulSet's size and the server joining (0
// for none) for this pass. A new cluster starts with exactly its members.
// Otherwise the StatefulSet keeps its size unless an operation holds it
// at another (the scale flow's steps do: status.operation.held), and never
// has fewer pods than members, whatever a lagging cache says. While the
// size is held, the server the next membership change adds has its
// joining line if its pod is within that size: it is started for the
// change, and a flow that failed before adding it keeps its line, without
// which a restart of its pod would not find its own id among the peers.
func desiredServers(zk *Cluster, e *ensemble, op *commonv1.Operation) (replicas int32, joining int) {
	if e.bootstrap {
		return int32(len(e.members)), 0
	}
	replicas = e.replicas(zk)
	held, holding := op.HeldReplicas(serverSet(zk).Name)
	if holding {
		replicas = held
	}
	if len(e.members) > 0 {
		replicas = max(replicas, int32(slices.Max(e.members)))
	}
	if !holding {
		return replicas, 0
	}
	if add, _ := nextMemberChange(e.members, int(zk.Spec.Replicas)); add != 0 && replicas > int32(build.Ordinal(add)) {
		return replicas, add
	}
	return replicas, 0
}

// Observe returns the flow to start when membership or a server's revision
// differs from the spec; Declare has applied and observed everything.
func (c *Controller) Observe(ctx *Context, e *ensemble) (Action, error) {
	zk := ctx.Obj
	switch {
	case e.created:
		return nil, nil
	case needsScale(zk.Spec.Replicas, *e.sts.Spec.Replicas, e.members):
		return framework.StartFlow[*Cluster](flowScale,
			fmt.Sprintf("replicas %d to %d", len(e.members), zk.Spec.Replicas)), nil
	case e.revisionKnown() && len(e.stale()) > 0:
		return framework.StartFlow[*Cluster](flowRestart, "revision "+e.sts.Status.UpdateRevision), nil
	}
	return nil, nil
}

// applyServers applies the members ConfigMap with the committed members
// and the server joining (0 for none), and the StatefulSet with replicas
// pods on the current config ConfigMap. It returns the StatefulSet as
// applied: a changed template shows there as a generation its controller
// has not observed yet.
func (c *Controller) applyServers(ctx *Context, replicas int32, members []int, joining int) (*appsv1.StatefulSet, error) {
	zk := ctx.Obj
	if err := c.applyMembers(ctx, members, joining); err != nil {
		return nil, err
	}
	data := build.ConfigData(zk)
	name, err := ctx.EnsureConfigMap(build.ComponentConfig, data)
	if err != nil {
		return nil, err
	}
	zk.Status.ConfigRevision = name
	sts := build.StatefulSet(zk, replicas, name, build.ConfigRevision(data))
	if err := ctx.Apply(sts, build.ComponentServer); err != nil {
		return nil, err
	}
	return sts, nil
}

// applyMembers applies the members ConfigMap: the committed members, and
// the server joining (0 for none) in its own key, which only that server
// reads.
func (c *Controller) applyMembers(ctx *Context, members []int, joining int) error {
	zk := ctx.Obj
	if len(members) == 0 {
		// A server started with no members would form an ensemble of its
		// own; never write that, whatever led here.
		return fmt.Errorf("refusing to write an empty membership into %s", build.MembersConfigMapName(zk))
	}
	var joiner *zkclient.Member
	if joining != 0 {
		joiner = &build.Members(zk, []int{joining}, c.opts.ClusterDomain)[0]
	}
	cm := build.MembersConfigMap(zk, build.Members(zk, members, c.opts.ClusterDomain), joiner)
	return ctx.Apply(cm, build.ComponentMembers)
}

// recoverMembers returns the membership to keep when no leader answers and
// status.members is empty although the StatefulSet exists. Usually the
// cache has not seen the status write of the pass that created the
// StatefulSet yet: RequireFresh requeues the pass quietly. Otherwise status
// was lost (a restore from a backup): the members ConfigMap, which the
// controller writes after every reconfiguration, says who the members are.
func (c *Controller) recoverMembers(ctx *Context, e *ensemble) ([]int, error) {
	zk := ctx.Obj
	if err := ctx.RequireFresh(); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: zk.Namespace, Name: build.MembersConfigMapName(zk)}, cm)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get the members ConfigMap: %w", err)
	}
	if cfg, err := zkclient.ParseConfig([]byte(cm.Data[build.DynamicConfigKey])); err == nil && len(cfg.Members) > 0 {
		return cfg.IDs(), nil
	}
	return build.IDs(e.replicas(zk)), nil
}

// needsScale reports whether membership or the StatefulSet's size differs
// from spec.replicas.
func needsScale(want, stsReplicas int32, members []int) bool {
	return stsReplicas != want || !slices.Equal(members, build.IDs(want))
}
