package oceanbase

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// The admission webhooks of OBClusters, OBTenants, OBParameters,
// OBTenantBackupPolicies and OBTenantBackups. The
// CRDs' schemas default and check what a schema can; the webhooks add
// Default, Validate, the API server's validation of the children a
// cluster's spec makes (RenderChildren), names no other cluster's
// children take (Clashes) and, for a tenant or a parameter, the checks
// against its cluster (Admit) and the other tenants or parameters of the
// cluster (Clashes); an OBParameter has no defaulting webhook. The
// controllers apply the same Default, Validate and Clashes on every pass,
// so they are safe without them. This file holds every kind's admission;
// Default is with each kind's actor.
//
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obcluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obclusters,verbs=create;update,versions=v1alpha1,name=mobcluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obclusters,verbs=create;update,versions=v1alpha1,name=vobcluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obtenant,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenants,verbs=create;update,versions=v1alpha1,name=mobtenant.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenant,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenants,verbs=create;update,versions=v1alpha1,name=vobtenant.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obtenantbackuppolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantbackuppolicies,verbs=create;update,versions=v1alpha1,name=mobtenantbackuppolicy.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenantbackuppolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantbackuppolicies,verbs=create;update,versions=v1alpha1,name=vobtenantbackuppolicy.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obtenantbackup,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantbackups,verbs=create;update,versions=v1alpha1,name=mobtenantbackup.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenantbackup,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantbackups,verbs=create;update,versions=v1alpha1,name=vobtenantbackup.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obtenantrestore,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantrestores,verbs=create;update,versions=v1alpha1,name=mobtenantrestore.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenantrestore,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantrestores,verbs=create;update,versions=v1alpha1,name=vobtenantrestore.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenantoperation,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenantoperations,verbs=create;update,versions=v1alpha1,name=vobtenantoperation.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obparameter,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obparameters,verbs=create;update,versions=v1alpha1,name=vobparameter.steward.dev,admissionReviewVersions=v1

// SetupWebhooks registers the OBCluster's, OBTenant's and OBParameter's
// webhooks on mgr.GetWebhookServer() (framework.SetupWebhooks). It is the
// system's Webhooks function; Setup must have registered the API types.
func SetupWebhooks(mgr ctrl.Manager) error {
	err := framework.SetupWebhooks[*Cluster](mgr, New(Options{}))
	if err == nil {
		err = setupTenantWebhooks(mgr)
	}
	if err == nil {
		err = setupParameterWebhooks(mgr)
	}
	if err == nil {
		err = framework.SetupWebhooks[*BackupPolicy](mgr, NewBackupPolicyController(Options{}))
	}
	if err == nil {
		err = framework.SetupWebhooks[*TenantBackup](mgr, NewTenantBackupController(Options{}))
	}
	if err == nil {
		err = framework.SetupWebhooks[*TenantRestore](mgr, NewTenantRestoreController(Options{}))
	}
	if err == nil {
		err = framework.SetupWebhooks[*TenantOperation](mgr, NewTenantOperationController(Options{}))
	}
	if err != nil {
		return fmt.Errorf("oceanbase: %w", err)
	}
	return nil
}

// setupTenantWebhooks registers the OBTenant's defaulting and validating
// webhooks.
func setupTenantWebhooks(mgr ctrl.Manager) error {
	return framework.SetupWebhooks[*Tenant](mgr, NewTenantController(Options{}))
}

// setupParameterWebhooks registers the OBParameter's validating webhook.
func setupParameterWebhooks(mgr ctrl.Manager) error {
	return framework.SetupWebhooks[*ClusterParameter](mgr, NewParameterController(nil, Options{}))
}

// Validate checks what the CRD's schema cannot:
//
//   - spec.image: a container image reference;
//   - each resource request within its limit (Kubernetes rejects such pods);
//   - each zone's name short enough for its StatefulSet's name (with
//     metadata.name) to fit its pods' labels;
//   - spec.credentials: names a Secret can have.
//
// What the API server checks on the children (node selectors,
// tolerations, affinity, topology spread, quantities, storage class) it
// checks itself, on the children RenderChildren renders.
func (*Controller) Validate(c *Cluster) error {
	spec := field.NewPath("spec")
	errs := standard.ValidateImage(spec.Child("image"), c.Spec.Image)
	errs = append(errs, standard.ValidateResources(spec.Child("resources"), c.Spec.Resources)...)
	for i, z := range c.Spec.Zones {
		if name := build.StatefulSetName(c, z.Name); len(name) > build.MaxStatefulSetName {
			errs = append(errs, field.Invalid(spec.Child("zones").Index(i).Child("name"), z.Name, fmt.Sprintf(
				"the zone's StatefulSet would be %s, %d characters: metadata.name and the zone's name together must have at most %d "+
					"(its pods' controller-revision-hash label adds a hash to it, within 63)", name, len(name), build.MaxStatefulSetName)))
		}
	}
	credentials := spec.Child("credentials")
	errs = append(errs, standard.ValidateObjectName(credentials.Child("root"), c.Spec.Credentials.Root, "Secret")...)
	errs = append(errs, standard.ValidateObjectName(credentials.Child("operator"), c.Spec.Credentials.Operator, "Secret")...)
	return errs.ToAggregate()
}

// RenderChildren returns the children a new cluster of c's spec gets, for
// the API server to validate at admission and before the controller
// applies them (framework.ChildRenderer): the Services, and each zone's
// StatefulSet and the Service of its last server (the longest name), each
// with the spec fields its fields come from.
func (c *Controller) RenderChildren(ob *Cluster) []framework.RenderedChild {
	children := []framework.RenderedChild{
		{Object: build.HeadlessService(ob)},
		{Object: build.ClientService(ob)},
	}
	for i, zone := range ob.Spec.Zones {
		children = append(children,
			framework.RenderedChild{Object: build.ServerService(ob, zone.Name, int(max(zone.Replicas, 1))-1), Sources: build.ServerServiceSources(i)},
			framework.RenderedChild{Object: build.StatefulSet(ob, zone, zone.Replicas, c.opts.ClusterDomain), Sources: build.StatefulSetSources(ob, i)})
	}
	return children
}

// Clashes refuses a cluster whose children would take the name of
// another OBCluster's child in the namespace (framework.ClashChecker):
// cluster "a"'s headless Service is "a-observers", which cluster
// "a-observers" takes for its client Service; cluster "a"'s server
// Services "a-b-0" are cluster "a-b-0"'s client Service. Of two
// clusters created so (the webhook off), the older keeps its names.
func (*Controller) Clashes(ctx context.Context, r client.Reader, ob *Cluster) error {
	var list obv1.OBClusterList
	// Every pass asks, and reads each cluster of the namespace: the
	// cache's own objects, read and never changed, not copies.
	if err := r.List(ctx, &list, client.InNamespace(ob.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list OBClusters: %w", err)
	}
	var mine map[string]source
	for i := range list.Items {
		other := &list.Items[i]
		// Every Service's name starts with its cluster's (serviceNames).
		if other.Name == ob.Name || !other.DeletionTimestamp.IsZero() || !framework.Older(other, ob) ||
			!framework.NamesMayClash(other.Name, ob.Name) {
			continue
		}
		if mine == nil {
			mine = serviceNames(ob)
		}
		theirs := serviceNames(other)
		for _, name := range slices.Sorted(maps.Keys(mine)) {
			if _, ok := theirs[name]; ok {
				return field.Invalid(mine[name].path, mine[name].value, fmt.Sprintf(
					"makes the Service %s, which OBCluster %s makes too: rename one of them", name, other.Name))
			}
		}
	}
	return nil
}

// serviceNames are the names of the Services c makes, or would make once
// each zone is scaled to its most servers, each with the field it comes
// from. Its StatefulSets and views cannot clash: a zone's name starts
// with a letter, and the names another cluster makes from its own end in
// its zones' names or a number.
func serviceNames(c *Cluster) map[string]source {
	meta := source{field.NewPath("metadata", "name"), c.Name}
	names := map[string]source{build.ClientServiceName(c): meta, build.HeadlessServiceName(c): meta}
	for i, z := range c.Spec.Zones {
		for ordinal := range maxServers {
			names[build.PodName(c, z.Name, ordinal)] = source{field.NewPath("spec", "zones").Index(i).Child("name"), z.Name}
		}
	}
	return names
}

// source is the field a name comes from, and its value.
type source struct {
	path  *field.Path
	value string
}

// maxServers is the most servers of a zone (the schema's maximum of
// spec.zones[].replicas).
const maxServers = 16

// Validate checks what the CRD's schema cannot: the unit's sizes, that
// the primary zone names the tenant's zones, and that spec.rootPassword is
// a name a Secret can have.
func (*TenantController) Validate(t *Tenant) error {
	errs := standard.ValidateObjectName(field.NewPath("spec", "rootPassword"), t.Spec.RootPassword, "Secret")
	unit := field.NewPath("spec", "unit")
	u := t.Spec.Unit
	if u.MaxCPU.Sign() <= 0 {
		errs = append(errs, field.Invalid(unit.Child("maxCPU"), u.MaxCPU.String(), "must be positive"))
	}
	if u.MinCPU != nil && (u.MinCPU.Sign() <= 0 || u.MinCPU.Cmp(u.MaxCPU) > 0) {
		errs = append(errs, field.Invalid(unit.Child("minCPU"), u.MinCPU.String(), "must be positive and at most maxCPU"))
	}
	if u.MemorySize.Sign() <= 0 {
		errs = append(errs, field.Invalid(unit.Child("memorySize"), u.MemorySize.String(), "must be positive"))
	}
	if u.LogDiskSize != nil && u.LogDiskSize.Sign() <= 0 {
		errs = append(errs, field.Invalid(unit.Child("logDiskSize"), u.LogDiskSize.String(), "must be positive"))
	}
	if t.Spec.Source != nil && t.Spec.Source.Restore != nil {
		errs = append(errs, validateRestoreSource(field.NewPath("spec", "source", "restore"), t.Spec.Source.Restore)...)
	}
	if pz := t.Spec.PrimaryZone; pz != obv1.DefaultPrimaryZone {
		zones := build.TenantZones(t)
		for _, z := range strings.FieldsFunc(pz, func(r rune) bool { return r == ',' || r == ';' }) {
			if !slices.Contains(zones, z) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "primaryZone"), pz,
					fmt.Sprintf("zone %q is not one of spec.zones", z)))
			}
		}
	}
	return errs.ToAggregate()
}

// validateRestoreSource checks a restore source: the restore point parses,
// and the archive and the backup sets are in different places.
func validateRestoreSource(path *field.Path, src *obv1.OBTenantRestoreSource) field.ErrorList {
	var errs field.ErrorList
	if _, err := build.RestoreSCN(src.Until); err != nil {
		errs = append(errs, field.Invalid(path.Child("until", "time"), src.Until.Time, err.Error()))
	}
	archive, data := strings.TrimSuffix(src.Archive.Path, "/"), strings.TrimSuffix(src.Data.Path, "/")
	if archive == data || strings.HasPrefix(archive, data+"/") || strings.HasPrefix(data, archive+"/") {
		errs = append(errs, field.Invalid(path.Child("data", "path"), src.Data.Path,
			"must not be, contain or be inside archive.path: OceanBase keeps them apart"))
	}
	return errs
}

// Admit checks the tenant against its cluster at admission
// (framework.Admitter): the cluster exists, has the tenant's zones, and
// each of them has at least unitNum servers (a unit per server). A tenant
// to be restored or to follow a primary needs its root password Secret to
// exist: it keeps its backup's or its primary's root password, which no
// generated one would be; a restore's decryption Secret must exist; a
// standby's primary must exist.
func (*TenantController) Admit(ctx context.Context, r client.Reader, t *Tenant) error {
	if t.Spec.Source != nil && t.DeletionTimestamp == nil {
		err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.RootPassword}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "rootPassword"), t.Spec.RootPassword,
				"a restored tenant or a standby keeps its backup's or its primary's root password: name a Secret that exists and holds it")}.ToAggregate()
		}
		if err != nil {
			return fmt.Errorf("get Secret %s: %w", t.Spec.RootPassword, err)
		}
	}
	if t.Spec.Source != nil && t.Spec.Source.Restore != nil && t.DeletionTimestamp == nil {
		path := field.NewPath("spec", "source", "restore", "decryptionSecret")
		if err := secretExists(ctx, r, t.Namespace, t.Spec.Source.Restore.DecryptionSecret, path); err != nil {
			return err
		}
	}
	if t.Spec.Source != nil && t.Spec.Source.Primary != nil {
		path := field.NewPath("spec", "source", "primary", "tenant")
		if p := t.Spec.Source.Primary.Tenant; p == t.Name {
			return field.ErrorList{field.Invalid(path, p, "a tenant cannot be its own standby")}.ToAggregate()
		}
		err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Source.Primary.Tenant}, &Tenant{})
		if apierrors.IsNotFound(err) {
			return field.ErrorList{field.NotFound(path, t.Spec.Source.Primary.Tenant)}.ToAggregate()
		}
		if err != nil {
			return fmt.Errorf("get OBTenant %s: %w", t.Spec.Source.Primary.Tenant, err)
		}
	}
	ob := &Cluster{}
	err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Cluster}, ob)
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("spec", "cluster"), t.Spec.Cluster)}.ToAggregate()
	}
	if err != nil {
		return fmt.Errorf("get OBCluster %s: %w", t.Spec.Cluster, err)
	}
	replicas := map[string]int32{}
	var names []string
	for _, z := range ob.Spec.Zones {
		replicas[z.Name] = max(z.Replicas, 1)
		names = append(names, z.Name)
	}
	var errs field.ErrorList
	for i, z := range t.Spec.Zones {
		path := field.NewPath("spec", "zones").Index(i).Child("name")
		n, ok := replicas[z.Name]
		switch {
		case !ok:
			errs = append(errs, field.NotSupported(path, z.Name, names))
		case n < t.Spec.UnitNum:
			errs = append(errs, field.Invalid(field.NewPath("spec", "unitNum"), t.Spec.UnitNum,
				fmt.Sprintf("zone %s of OBCluster %s has %d observers: a zone holds at most one unit of a tenant per server", z.Name, ob.Name, n)))
		}
	}
	return errs.ToAggregate()
}

// Clashes refuses a tenantName another OBTenant of the same cluster
// already manages (framework.ClashChecker): two objects would fight over
// one tenant. Of two, the older keeps it.
func (*TenantController) Clashes(ctx context.Context, r client.Reader, t *Tenant) error {
	var list obv1.OBTenantList
	if err := r.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("list OBTenants: %w", err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		obv1.DefaultTenant(o)
		if o.UID == t.UID || o.Spec.Cluster != t.Spec.Cluster || o.Spec.TenantName != t.Spec.TenantName || o.DeletionTimestamp != nil {
			continue
		}
		if framework.Older(o, t) {
			return field.ErrorList{field.Duplicate(field.NewPath("spec", "tenantName"), t.Spec.TenantName)}.ToAggregate()
		}
	}
	return nil
}

// Clashes refuses a parameter that the cluster's spec.parameters sets, or
// that another OBParameter of the cluster sets, the older keeping it
// (framework.ClashChecker): two owners of one value would set it back and
// forth. The controller checks it on every pass too, so a parameter
// added to the cluster's spec later stops this one.
func (*ParameterController) Clashes(ctx context.Context, r client.Reader, p *ClusterParameter) error {
	name := field.NewPath("spec", "name")
	ob := &Cluster{}
	err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Cluster}, ob)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("get OBCluster %s: %w", p.Spec.Cluster, err)
	}
	if err == nil && p.Spec.Tenant == "" && slices.ContainsFunc(ob.Spec.Parameters, func(q obv1.Parameter) bool { return q.Name == p.Spec.Name }) {
		return field.ErrorList{field.Invalid(name, p.Spec.Name,
			fmt.Sprintf("OBCluster %s sets it in spec.parameters; change it there, or remove it there first", ob.Name))}.ToAggregate()
	}
	var list obv1.OBParameterList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return fmt.Errorf("list OBParameters: %w", err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == p.UID || o.Spec.Cluster != p.Spec.Cluster || o.Spec.Name != p.Spec.Name || o.Spec.Tenant != p.Spec.Tenant || o.DeletionTimestamp != nil {
			continue
		}
		if framework.Older(o, p) {
			return field.ErrorList{field.Duplicate(name, fmt.Sprintf("%s: OBParameter %s sets it", p.Spec.Name, o.Name))}.ToAggregate()
		}
	}
	return nil
}

// Admit checks the parameter against its cluster at admission
// (framework.Admitter): the cluster exists, and has the zone or the server
// the parameter is limited to; a tenant's parameter's OBTenant exists and
// is of the cluster.
func (*ParameterController) Admit(ctx context.Context, r client.Reader, p *ClusterParameter) error {
	ob := &Cluster{}
	err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Cluster}, ob)
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("spec", "cluster"), p.Spec.Cluster)}.ToAggregate()
	}
	if err != nil {
		return fmt.Errorf("get OBCluster %s: %w", p.Spec.Cluster, err)
	}
	if p.Spec.Zone != "" && !slices.ContainsFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == p.Spec.Zone }) {
		var zones []string
		for _, z := range ob.Spec.Zones {
			zones = append(zones, z.Name)
		}
		return field.ErrorList{field.NotSupported(field.NewPath("spec", "zone"), p.Spec.Zone, zones)}.ToAggregate()
	}
	if p.Spec.Server != "" && !slices.ContainsFunc(ob.Status.Servers, func(s obv1.OBServerStatus) bool { return s.Pod == p.Spec.Server }) {
		return field.ErrorList{field.NotFound(field.NewPath("spec", "server"), p.Spec.Server)}.ToAggregate()
	}
	if p.Spec.Tenant != "" {
		t := &Tenant{}
		err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Tenant}, t)
		switch {
		case apierrors.IsNotFound(err):
			return field.ErrorList{field.NotFound(field.NewPath("spec", "tenant"), p.Spec.Tenant)}.ToAggregate()
		case err != nil:
			return fmt.Errorf("get OBTenant %s: %w", p.Spec.Tenant, err)
		case t.Spec.Cluster != p.Spec.Cluster:
			return field.ErrorList{field.Invalid(field.NewPath("spec", "tenant"), p.Spec.Tenant,
				fmt.Sprintf("the OBTenant is of OBCluster %s, not %s", t.Spec.Cluster, p.Spec.Cluster))}.ToAggregate()
		}
	}
	return nil
}

// Admit checks at admission that the policy's OBTenant and encryption
// Secret exist (framework.Admitter).
func (*BackupPolicyController) Admit(ctx context.Context, r client.Reader, p *BackupPolicy) error {
	if err := tenantExists(ctx, r, p.Namespace, p.Spec.Tenant); err != nil {
		return err
	}
	return secretExists(ctx, r, p.Namespace, p.Spec.DataBackup.EncryptionSecret, field.NewPath("spec", "dataBackup", "encryptionSecret"))
}

// secretExists refuses a Secret name, at path, when no Secret has it; ""
// names none.
func secretExists(ctx context.Context, r client.Reader, namespace, name string, path *field.Path) error {
	if name == "" {
		return nil
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(path, name)}.ToAggregate()
	}
	if err != nil {
		return fmt.Errorf("get Secret %s: %w", name, err)
	}
	return nil
}

// Clashes refuses a second policy of one tenant (framework.ClashChecker):
// two policies would set its destinations back and forth. Of two, the
// older keeps it.
func (*BackupPolicyController) Clashes(ctx context.Context, r client.Reader, p *BackupPolicy) error {
	var list obv1.OBTenantBackupPolicyList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return fmt.Errorf("list OBTenantBackupPolicies: %w", err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID != p.UID && o.Spec.Tenant == p.Spec.Tenant && o.DeletionTimestamp == nil && framework.Older(o, p) {
			return field.ErrorList{field.Duplicate(field.NewPath("spec", "tenant"), p.Spec.Tenant)}.ToAggregate()
		}
	}
	return nil
}

// Admit checks at admission that the backup's OBTenant and encryption
// Secret exist (framework.Admitter); a cancel is never refused.
func (*TenantBackupController) Admit(ctx context.Context, r client.Reader, b *TenantBackup) error {
	if b.Spec.Cancel {
		return nil
	}
	if err := tenantExists(ctx, r, b.Namespace, b.Spec.Tenant); err != nil {
		return err
	}
	return secretExists(ctx, r, b.Namespace, b.Spec.EncryptionSecret, field.NewPath("spec", "encryptionSecret"))
}

// Validate checks the restore's source (as an OBTenant's).
func (*TenantRestoreController) Validate(r *TenantRestore) error {
	return validateRestoreSource(field.NewPath("spec", "source"), &r.Spec.Source).ToAggregate()
}

// Admit checks at admission that the restore's OBTenant exists and is to
// be restored (framework.Admitter): a restore of an OBTenant that creates
// its tenant empty would race it.
func (*TenantRestoreController) Admit(ctx context.Context, r client.Reader, tr *TenantRestore) error {
	t := &Tenant{}
	err := r.Get(ctx, client.ObjectKey{Namespace: tr.Namespace, Name: tr.Spec.Tenant}, t)
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.NotFound(field.NewPath("spec", "tenant"), tr.Spec.Tenant)}.ToAggregate()
	case err != nil:
		return fmt.Errorf("get OBTenant %s: %w", tr.Spec.Tenant, err)
	case t.Spec.Source == nil || t.Spec.Source.Restore == nil:
		return field.ErrorList{field.Invalid(field.NewPath("spec", "tenant"), tr.Spec.Tenant,
			"the OBTenant has no spec.source.restore: set it there, and its controller creates this restore")}.ToAggregate()
	}
	return nil
}

// tenantExists refuses spec.tenant when no OBTenant has the name.
func tenantExists(ctx context.Context, r client.Reader, namespace, name string) error {
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &Tenant{})
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(field.NewPath("spec", "tenant"), name)}.ToAggregate()
	}
	if err != nil {
		return fmt.Errorf("get OBTenant %s: %w", name, err)
	}
	return nil
}

// Validate checks what the schema cannot: a replay point parses.
func (*TenantOperationController) Validate(o *TenantOperation) error {
	if rl := o.Spec.ReplayLog; rl != nil {
		if _, err := build.RestoreSCN(rl.Until); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "replayLog", "until", "time"), rl.Until.Time, err.Error())}.ToAggregate()
		}
	}
	return nil
}

// Admit refuses at admission an operation OceanBase would refuse, from
// what the OBTenants' status says (framework.Admitter): the tenants
// exist; a switchover's primary is PRIMARY and its standby a STANDBY
// following it; a failover's tenant is a STANDBY; a password change's is a
// PRIMARY and its Secret exists; a replay's tenant is a STANDBY; an
// upgrade's tenant is a PRIMARY (a standby's follows its primary's log). A
// finished operation is a record: nothing is checked.
func (*TenantOperationController) Admit(ctx context.Context, r client.Reader, o *TenantOperation) error {
	if operationFinished(o) {
		return nil
	}
	get := func(path *field.Path, name, role string) (*Tenant, *field.Error, error) {
		t := &Tenant{}
		err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: name}, t)
		switch {
		case apierrors.IsNotFound(err):
			return nil, field.NotFound(path, name), nil
		case err != nil:
			return nil, nil, fmt.Errorf("get OBTenant %s: %w", name, err)
		case t.Status.TenantRole != role:
			return nil, field.Invalid(path, name, fmt.Sprintf("its tenant is %q, not %s", t.Status.TenantRole, role)), nil
		}
		return t, nil, nil
	}
	var errs field.ErrorList
	check := func(path *field.Path, name, role string) *Tenant {
		t, ferr, err := get(path, name, role)
		if err != nil {
			errs = append(errs, field.InternalError(path, err))
		} else if ferr != nil {
			errs = append(errs, ferr)
		}
		return t
	}
	spec := field.NewPath("spec")
	switch s := o.Spec; {
	case s.Switchover != nil:
		path := spec.Child("switchover")
		check(path.Child("primary"), s.Switchover.Primary, obv1.TenantRolePrimary)
		if sb := check(path.Child("standby"), s.Switchover.Standby, obv1.TenantRoleStandby); sb != nil &&
			(sb.Spec.Source == nil || sb.Spec.Source.Primary == nil || sb.Spec.Source.Primary.Tenant != s.Switchover.Primary) {
			errs = append(errs, field.Invalid(path.Child("standby"), s.Switchover.Standby,
				fmt.Sprintf("its spec.source.primary is not %s: it does not follow it", s.Switchover.Primary)))
		}
	case s.Failover != nil:
		check(spec.Child("failover", "standby"), s.Failover.Standby, obv1.TenantRoleStandby)
	case s.ChangePassword != nil:
		path := spec.Child("changePassword")
		check(path.Child("tenant"), s.ChangePassword.Tenant, obv1.TenantRolePrimary)
		err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: s.ChangePassword.Secret}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			errs = append(errs, field.NotFound(path.Child("secret"), s.ChangePassword.Secret))
		} else if err != nil {
			errs = append(errs, field.InternalError(path.Child("secret"), err))
		}
	case s.ReplayLog != nil:
		check(spec.Child("replayLog", "tenant"), s.ReplayLog.Tenant, obv1.TenantRoleStandby)
	case s.Upgrade != nil:
		check(spec.Child("upgrade", "tenant"), s.Upgrade.Tenant, obv1.TenantRolePrimary)
	}
	return errs.ToAggregate()
}

// Clashes refuses an operation on a tenant another unfinished operation
// names (framework.ClashChecker): one operation at a time per tenant, the
// older first.
func (*TenantOperationController) Clashes(ctx context.Context, r client.Reader, o *TenantOperation) error {
	var list obv1.OBTenantOperationList
	if err := r.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
		return fmt.Errorf("list OBTenantOperations: %w", err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == o.UID || other.DeletionTimestamp != nil || operationFinished(other) || !framework.Older(other, o) {
			continue
		}
		for _, name := range o.Tenants() {
			if slices.Contains(other.Tenants(), name) {
				return field.ErrorList{field.Forbidden(field.NewPath("spec"),
					fmt.Sprintf("the OBTenantOperation %s of the OBTenant %s has not finished: one operation at a time per tenant", other.Name, name))}.ToAggregate()
			}
		}
	}
	return nil
}
