package matrixone

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// storeKind is what the store set controller needs to know of one of the
// kinds it runs (TNSet, CNSet, ProxySet): how to read its spec as a
// build.StoreSet, where its status is, and its defaults.
type storeKind[T framework.Object] struct {
	kind string
	role build.Role
	// set reads obj's spec, joining the LogSet log.
	set func(obj T, log *mov1.LogSet) build.StoreSet
	// logSet is the LogSet obj names.
	logSet   func(obj T) string
	status   func(obj T) *mov1.StoreSetStatus
	defaults func(obj T)
	// reclaim is the stores' volumes' reclaim policy; "" without volumes.
	reclaim func(obj T) commonv1.ReclaimPolicy
	// drainTimeout bounds a store's drain before it leaves or restarts;
	// nil for kinds whose stores do not drain (all but CNs).
	drainTimeout func(obj T) time.Duration
}

// StoreSetController is the actor of a TNSet, CNSet or ProxySet: Declare
// waits for what the role needs, applies the stores and observes them
// through HAKeeper, Observe starts the flows that drain and remove
// leaving CNs and restart stale stores one at a time, Finalize
// applies the volumes' reclaim policy.
type StoreSetController[T framework.Object] struct {
	opts    Options
	k       storeKind[T]
	views   *viewReader
	trigger *framework.Trigger
}

func newStoreSetController[T framework.Object](opts Options, k storeKind[T]) *StoreSetController[T] {
	opts = opts.withDefaults()
	return &StoreSetController[T]{opts: opts, k: k, trigger: framework.NewTrigger(), views: opts.sharedViews()}
}

func (c *StoreSetController[T]) setup(mgr ctrl.Manager) error {
	component := build.StoreSet{Role: c.k.role}.Component()
	flows := []framework.Flow[T, *storeState]{c.rollingRestartFlow()}
	if c.k.drainTimeout != nil {
		flows = append(flows, c.scaleInFlow())
	}
	_, err := framework.Setup(mgr, framework.Options[T, *storeState]{
		Actor:             c,
		Flows:             flows,
		App:               build.App,
		PartOf:            build.PartOf,
		Owns:              []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}},
		Resync:            c.opts.Resync,
		ResyncNotReady:    c.opts.ResyncNotReady,
		ResyncNotReadyMax: framework.LongNotReadyResyncs * c.opts.Resync, // a set whose log stores stay unreachable
		Trigger:           c.trigger,
		Customize: func(b *builder.Builder) *builder.Builder {
			return b.Watches(&corev1.Pod{}, workload.EnqueueOwnerByLabels(build.App, component))
		},
	})
	return err
}

// Default applies the kind's defaults; the defaulting webhook calls it too.
func (c *StoreSetController[T]) Default(obj T) { c.k.defaults(obj) }

// Validate checks what the CRD's schema cannot (validatePodSet), that
// spec.logSet is a name a LogSet can have, a CN's drainTimeout not
// negative, and a CN's labels (validateCNLabels).
func (c *StoreSetController[T]) Validate(obj T) error {
	spec := field.NewPath("spec")
	s := c.k.set(obj, &mov1.LogSet{})
	errs := validatePodSet(spec, c.k.role, s.Pods)
	errs = append(errs, standard.ValidateObjectName(spec.Child("logSet"), c.k.logSet(obj), "LogSet")...)
	errs = append(errs, validateCNLabels(spec.Child("labels"), s.CNLabels)...)
	if c.k.drainTimeout != nil {
		if d := c.k.drainTimeout(obj); d < 0 {
			errs = append(errs, standard.ValidateDuration(spec.Child("drainTimeout"), &metav1.Duration{Duration: d})...)
		}
	}
	return errs.ToAggregate()
}

// Dependencies waits for the LogSet to publish HAKeeper's addresses
// (status.serviceAddresses, set on its first pass once the shared storage
// exists), which the stores' configuration names. It does not wait for
// HAKeeper to run: a TN or proxy started earlier retries until HAKeeper
// answers, and starting it beside the log stores saves their start time
// (bench/matrixone measured it). A CN waits longer, in Declare, for
// HAKeeper to hear from a TN.
func (c *StoreSetController[T]) Dependencies(ctx *framework.Context[T]) ([]framework.Dependency, error) {
	log := &mov1.LogSet{}
	log.Name = c.k.logSet(ctx.Obj)
	return []framework.Dependency{{Object: log, Ready: func(obj client.Object) (bool, string) {
		if len(obj.(*mov1.LogSet).Status.ServiceAddresses) == 0 {
			return false, "publishes no HAKeeper address yet"
		}
		return true, ""
	}}}, nil
}

// storeState is what a pass observed of a store set.
type storeState struct {
	set  build.StoreSet
	sts  *appsv1.StatefulSet
	pods map[int]*corev1.Pod
	// view is HAKeeper's, answered at viewAt (viewRead); viewOK is false
	// when no log pod's probe answered within MaxViewAge, and viewErr
	// says why.
	view    hakeeper.View
	viewAt  time.Time
	viewOK  bool
	viewErr string
	now     time.Time
	// logPods are the LogSet's pods, whose probes run the CNs' lock
	// service restart handshake.
	logPods map[int]*corev1.Pod
	// highest is the highest ordinal of the set's pods, terminating ones
	// included; -1 when there is none.
	highest int
	// cachedReplicas is the CNs' StatefulSet's size as the cache had it
	// before this pass applied it (nil before it exists, and for other
	// kinds).
	cachedReplicas *int32
	// labelErr is why this pass could not set a CN's labels; nil when it
	// could, or had none to set.
	labelErr error
}

// Declare runs on every pass: it resolves the LogSet's shared storage
// (resolveSharedStorage: a BucketClaim bound to the LogSet), reads
// HAKeeper's view through the LogSet's probes; a CNSet not yet created waits until HAKeeper hears from
// a TN (a CN started before one gives up after 30 s); then it applies the
// headless Service, the configuration template, the StatefulSet and, for
// CNs and proxies, the SQL Service; it sets spec.labels on the CNs whose
// labels HAKeeper has otherwise (labelCNs); it observes the stores into
// status and sets the conditions. It returns what it found, for Observe; nil while a
// CNSet waits for a TN.
func (c *StoreSetController[T]) Declare(ctx *framework.Context[T]) (*storeState, error) {
	obj := ctx.Obj
	// The LogSet as its pods are rendered: a BucketClaim's location
	// resolved, as the LogSet resolves it.
	log, reason, why, err := resolveSharedStorage(ctx, ctx.Client, ctx.Dependencies[0].(*mov1.LogSet))
	if err != nil {
		return nil, err
	}
	if why != "" {
		setWaitingForStorage(ctx, reason, why)
		return nil, nil
	}
	st := &storeState{set: c.k.set(obj, log), pods: map[int]*corev1.Pod{}, now: time.Now()}
	logPods, err := logSet(log).Pods(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	st.logPods = logPods
	read := c.views.read(ctx, groupOf(log), c.trigger, groupOf(obj), logPods, ctx.Operation().Running())
	st.view, st.viewAt, st.viewOK, st.viewErr = read.view, read.at, read.ok, read.why
	status := c.k.status(obj)
	if c.k.role == build.RoleCN && status.ConfigRevision == "" && !st.tnUp() {
		why := "waiting for HAKeeper to hear from a TN"
		if !st.viewOK {
			why += ": no view of HAKeeper: " + st.viewErr
		}
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, mov1.ReasonWaitingForTN, why)
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, mov1.ReasonWaitingForTN, why)
		ctx.SetReady(false, mov1.ReasonWaitingForTN, why)
		return nil, nil
	}
	if err := ctx.Apply(st.set.HeadlessService(), st.set.Component()); err != nil {
		return nil, err
	}
	text, err := st.set.Config()
	if err != nil {
		return nil, framework.InvalidSpec(fmt.Errorf("spec.config: %w", err))
	}
	name, err := ctx.EnsureConfigMap(st.set.ConfigComponent(), map[string]string{st.set.TemplateFile(): text})
	if err != nil {
		return nil, err
	}
	status.ConfigRevision = name
	pods, err := workload.Set{Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Selector: build.Selector(obj.GetName(), st.set.Component())}.Pods(ctx, ctx.Client)
	if err != nil {
		return nil, err
	}
	st.highest = -1
	for ordinal, p := range pods {
		st.highest = max(st.highest, ordinal)
		if p.DeletionTimestamp.IsZero() {
			st.pods[ordinal] = p
		}
	}
	applied := st.set
	if c.k.drainTimeout != nil {
		live := &appsv1.StatefulSet{}
		switch err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}, live); {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, fmt.Errorf("get StatefulSet %s: %w", obj.GetName(), err)
		}
		if live != nil {
			st.cachedReplicas = live.Spec.Replicas
		}
		// Leaving CNs stay until a scale-in drained and released them
		// (status.operation.held).
		applied.Replicas = workload.Replicas(st.set.Replicas, live, obj.StatusCore().Operation)
	}
	st.sts = applied.StatefulSet(name)
	if err := ctx.Apply(st.sts, st.set.Component()); err != nil {
		return nil, err
	}
	if st.set.ServesSQL() {
		if err := ctx.Apply(st.set.SQLService(), st.set.Component()); err != nil {
			return nil, err
		}
		status.SQLAddress = st.set.SQLAddress()
	}
	if _, err := ctx.CollectConfigMaps(st.set.ConfigComponent()); err != nil {
		return nil, err
	}
	if pods := st.unlabeled(); len(pods) > 0 {
		// Not an error of the pass: Ready says it, and the next pass
		// tries again.
		st.labelErr = c.labelCNs(ctx, st, pods)
	}
	st.setStatus(status)
	st.setConditions(ctx, obj)
	return st, nil
}

// Observe sets Working again the CNs the set keeps that HAKeeper has
// Draining with no flow to own them (a CN restarted, a scale-in undone);
// starts the scale-in flow when the CNs' StatefulSet is larger than
// spec.replicas; and starts the rolling-restart flow when a store the set
// keeps runs an older revision than the StatefulSet's latest.
func (c *StoreSetController[T]) Observe(_ *framework.Context[T], st *storeState) (framework.Action[T], error) {
	if st == nil {
		return nil, nil
	}
	if c.k.drainTimeout != nil {
		if pods := c.toUndrain(st); len(pods) > 0 {
			return framework.Named("UndrainCN", func(ctx *framework.Context[T]) error { return c.undrain(ctx, st, pods) }), nil
		}
		if size := *st.sts.Spec.Replicas; size > st.set.Replicas {
			return framework.StartFlow[T](flowScaleIn, scaleInTrigger(size, st.set.Replicas)), nil
		}
	}
	if len(st.staleKept()) > 0 {
		return framework.StartFlow[T](flowRollingRestart, rollingRestartTrigger(st.sts)), nil
	}
	return nil, nil
}

// Finalize applies the volumes' reclaim policy when the set is deleted
// (see LogSetController.Finalize).
func (c *StoreSetController[T]) Finalize(ctx *framework.Context[T]) (bool, error) {
	obj := ctx.Obj
	c.views.forget(obj.GetNamespace()+"/"+c.k.logSet(obj), c.trigger, groupOf(obj))
	if c.k.reclaim(obj) != commonv1.ReclaimDelete {
		return true, nil
	}
	component := build.StoreSet{Role: c.k.role}.Component()
	return deleteClaims(ctx, workload.Set{Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Selector: build.Selector(obj.GetName(), component), Volume: build.DataVolume})
}

// RenderChildren returns the children a new set of obj's spec gets, for
// the API server to validate at admission (framework.ChildRenderer). The
// LogSet is not read at admission: its shared storage is left out.
func (c *StoreSetController[T]) RenderChildren(obj T) []framework.RenderedChild {
	s := c.k.set(obj, &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Name: c.k.logSet(obj)}})
	children := []framework.RenderedChild{
		{Object: s.HeadlessService()},
		{Object: s.StatefulSet(obj.GetName() + "-config"), Sources: statefulSetSources},
	}
	if s.ServesSQL() {
		children = append(children, framework.RenderedChild{Object: s.SQLService()})
	}
	return children
}

// tnUp reports whether HAKeeper hears from a TN store.
func (st *storeState) tnUp() bool {
	return st.viewOK && slices.ContainsFunc(st.view.TNStores, func(s wire.TNStore) bool { return s.State == wire.StoreUp })
}

// store is how HAKeeper sees the store of pod.
func (st *storeState) store(pod string) mov1.StoreStatus {
	s := mov1.StoreStatus{Pod: pod, UUID: wire.StoreID(st.set.Namespace, pod), State: mov1.StoreUnknown}
	if !st.viewOK {
		return s
	}
	state := func(v string) mov1.StoreState {
		switch v {
		case wire.StoreUp:
			return mov1.StoreUp
		case wire.StoreDown:
			return mov1.StoreDown
		}
		return mov1.StoreUnknown
	}
	switch st.set.Role {
	case build.RoleTN:
		if i := slices.IndexFunc(st.view.TNStores, func(t wire.TNStore) bool { return t.UUID == s.UUID }); i >= 0 {
			s.State = state(st.view.TNStores[i].State)
		}
	case build.RoleCN:
		if i := slices.IndexFunc(st.view.CNStores, func(c wire.CNStore) bool { return c.UUID == s.UUID }); i >= 0 {
			cn := st.view.CNStores[i]
			s.State, s.WorkState, s.Labels = state(cn.State), cn.WorkState, labelList(cn.Labels)
		}
	case build.RoleProxy:
		// HAKeeper lists the proxies it hears from, with no state.
		if slices.ContainsFunc(st.view.ProxyStores, func(p wire.ProxyStore) bool { return p.UUID == s.UUID }) {
			s.State = mov1.StoreUp
		}
	}
	return s
}

func (st *storeState) setStatus(status *mov1.StoreSetStatus) {
	ready := 0
	for _, p := range st.pods {
		if workload.IsReady(p) {
			ready++
		}
	}
	status.ReadyReplicas = int32(ready)
	status.Selector = labels.SelectorFromSet(build.Selector(st.set.Name, st.set.Component())).String()
	status.Stores = nil
	for i := range int(st.set.Replicas) {
		s := st.store(st.set.PodName(i))
		s.State = shownState(st.pods[i], s.State)
		status.Stores = append(status.Stores, s)
	}
}

// notReady says why the set is not Ready; empty when every store's pod
// is ready on the latest revision and HAKeeper hears from every store.
func (st *storeState) notReady() (reason, message string) {
	if !st.viewOK {
		return mov1.ReasonHAKeeperUnreachable, "no view of HAKeeper: " + st.viewErr
	}
	for i := range int(st.set.Replicas) {
		name := st.set.PodName(i)
		p, ok := st.pods[i]
		switch {
		case !ok:
			return mov1.ReasonStoresDown, name + " does not exist"
		case !workload.IsReady(p):
			return mov1.ReasonStoresDown, name + " is not ready"
		}
		if s := st.store(name); s.State != mov1.StoreUp {
			return mov1.ReasonStoresDown, fmt.Sprintf("the store of %s is %s to HAKeeper", name, s.State)
		}
	}
	if leaving := st.leaving(); len(leaving) > 0 {
		return mov1.ReasonDraining, fmt.Sprintf("%d CNs leave the set once drained, first %s", len(leaving), leaving[0].Name)
	}
	if unlabeled := st.unlabeled(); len(unlabeled) > 0 {
		message := fmt.Sprintf("the labels of %s in HAKeeper are %s, not %s", unlabeled[0].Name,
			formatLabels(st.store(unlabeled[0].Name).Labels), formatLabels(st.set.CNLabels))
		if st.labelErr != nil {
			message += ": " + st.labelErr.Error()
		}
		return mov1.ReasonLabeling, message
	}
	if why := revisionPending(st.sts); why != "" {
		return commonv1.ReasonRestarting, why
	}
	if stale := st.staleKept(); len(stale) > 0 {
		return commonv1.ReasonRestarting, fmt.Sprintf("%d stores to restart onto revision %s, next %s",
			len(stale), st.sts.Status.UpdateRevision, stale[0].Name)
	}
	return "", ""
}

// setConditions sets Available (a store of the set is up), Progressing
// and Ready.
func (st *storeState) setConditions(ctx interface {
	SetCondition(t string, status metav1.ConditionStatus, reason, message string)
	SetReady(ready bool, reason, message string)
}, obj framework.Object) {
	up := 0
	for i := range int(st.set.Replicas) {
		if shownState(st.pods[i], st.store(st.set.PodName(i)).State) == mov1.StoreUp {
			up++
		}
	}
	if up > 0 {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionTrue, mov1.ReasonStoresServing,
			fmt.Sprintf("%d of %d stores up", up, st.set.Replicas))
	} else {
		ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, mov1.ReasonStoresDown, "no store is up")
	}
	reason, message := st.notReady()
	if reason != "" && reason != commonv1.ReasonRestarting && neverReady(obj) {
		reason = commonv1.ReasonCreating
	}
	if reason == "" {
		ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionFalse, commonv1.ReasonStable, "")
		ctx.SetReady(true, "", fmt.Sprintf("%d stores up", st.set.Replicas))
		return
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	ctx.SetReady(false, reason, message)
}

// restartBlocked says why restarting a store now would leave the set
// without its others: empty when every store's pod has been ready for
// RestartSettle and HAKeeper hears from every store.
func (st *storeState) restartBlocked() string {
	if !st.viewOK {
		return "no view of HAKeeper: " + st.viewErr
	}
	for i := range int(st.set.Replicas) {
		p, ok := st.pods[i]
		if !ok || !workload.IsReady(p) {
			return st.set.PodName(i) + " is not ready"
		}
		since, _ := workload.ReadySince(p)
		if st.now.Sub(since) < RestartSettle {
			return fmt.Sprintf("%s has been ready for less than %s", p.Name, RestartSettle)
		}
		if why := viewPredates(st.viewAt, p.Name, since); why != "" {
			return why
		}
		if s := st.store(p.Name); s.State != mov1.StoreUp {
			return fmt.Sprintf("the store of %s is %s to HAKeeper", p.Name, s.State)
		}
	}
	return ""
}
