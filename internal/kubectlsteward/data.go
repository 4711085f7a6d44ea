package kubectlsteward

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// BackupOptions are the backup command's.
type BackupOptions struct {
	// Name names the new backup object. Default "<source>-<UTC time>".
	Name string
	// Incremental takes an OceanBase incremental backup instead of a full
	// one.
	Incremental bool
	// PlusArchivelog makes an OceanBase backup carry its archive pieces.
	PlusArchivelog bool
	// EncryptionSecret encrypts an OceanBase backup. Default: the
	// tenant's backup policy's, so the backup is encrypted as the policy's
	// are.
	EncryptionSecret string
	// VolumeClaim is the claim a MatrixOne backup is written to.
	VolumeClaim string
	// Schedule is the BackupSchedule whose destination a MatrixOne backup
	// is written to. Default: the cluster's one schedule with a
	// destination, when VolumeClaim is empty.
	Schedule string
}

// Backup creates one backup of an OceanBase tenant (an OBTenantBackup,
// as its OBTenantBackupPolicy's destinations say) or of a MatrixOne
// cluster (a BackupJob), and says how to follow it. ZooKeeper and GPSS
// have no backups yet.
func (c *CLI) Backup(ctx context.Context, namespace, typ, name string, o BackupOptions) error {
	gvk, obj, err := c.get(ctx, namespace, typ, name)
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = name + "-" + c.now().UTC().Format("20060102150405")
	}
	var backup client.Object
	var what string
	switch src := obj.(type) {
	case *obv1.OBTenant:
		backup, what, err = c.tenantBackup(ctx, src, o)
	case *mov1.MatrixOneCluster:
		backup, what, err = c.clusterBackup(ctx, src, o)
	default:
		return fmt.Errorf("%s: kubectl steward backup takes an OBTenant or a MatrixOneCluster (ZooKeeper and GPSS have no backups yet)", kindName(gvk, name))
	}
	if err != nil {
		return err
	}
	return c.created(ctx, backup, what)
}

// tenantBackup is an OBTenantBackup of t, encrypted as its policy's
// backups are unless o names another Secret.
func (c *CLI) tenantBackup(ctx context.Context, t *obv1.OBTenant, o BackupOptions) (client.Object, string, error) {
	policy, err := c.backupPolicy(ctx, t)
	if err != nil {
		return nil, "", err
	}
	b := &obv1.OBTenantBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: o.Name},
		Spec: obv1.OBTenantBackupSpec{Tenant: t.Name, Type: obv1.BackupFull, PlusArchivelog: o.PlusArchivelog,
			EncryptionSecret: o.EncryptionSecret},
	}
	if o.Incremental {
		b.Spec.Type = obv1.BackupIncremental
	}
	if b.Spec.EncryptionSecret == "" {
		b.Spec.EncryptionSecret = policy.Spec.DataBackup.EncryptionSecret
	}
	what := fmt.Sprintf("a %s backup of tenant %s to %s", b.Spec.Type, t.Name, destination(policy.Spec.DataBackup.Destination))
	if b.Spec.EncryptionSecret != "" {
		what += ", encrypted with the password in Secret " + b.Spec.EncryptionSecret
	}
	return b, what, nil
}

// clusterBackup is a BackupJob of mo to the claim o names, or to the
// destination of a BackupSchedule of the cluster.
func (c *CLI) clusterBackup(ctx context.Context, mo *mov1.MatrixOneCluster, o BackupOptions) (client.Object, string, error) {
	job := &mov1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: mo.Namespace, Name: o.Name},
		Spec:       mov1.BackupJobSpec{Cluster: mo.Name},
	}
	switch {
	case o.VolumeClaim != "" && o.Schedule != "":
		return nil, "", fmt.Errorf("name one destination: --volume-claim or --schedule")
	case o.VolumeClaim != "":
		job.Spec.Destination.VolumeClaim = &mov1.BackupVolumeClaim{ClaimName: o.VolumeClaim}
		return job, fmt.Sprintf("a backup of cluster %s to volume claim %s", mo.Name, o.VolumeClaim), nil
	}
	var schedules mov1.BackupScheduleList
	if err := c.client.List(ctx, &schedules, client.InNamespace(mo.Namespace)); err != nil {
		return nil, "", fmt.Errorf("list BackupSchedules: %w", err)
	}
	var names []string
	for i := range schedules.Items {
		s := &schedules.Items[i]
		if s.Spec.Cluster != mo.Name || s.Spec.Destination == nil || o.Schedule != "" && s.Name != o.Schedule {
			continue
		}
		names = append(names, s.Name)
		job.Spec.Destination = *s.Spec.Destination.DeepCopy()
	}
	switch {
	case len(names) == 1:
		return job, fmt.Sprintf("a backup of cluster %s to the destination of BackupSchedule %s", mo.Name, names[0]), nil
	case o.Schedule != "":
		return nil, "", fmt.Errorf("no BackupSchedule %s of cluster %s with a destination in namespace %s", o.Schedule, mo.Name, mo.Namespace)
	case len(names) == 0:
		return nil, "", fmt.Errorf("cluster %s has no BackupSchedule with a destination: name one with --volume-claim CLAIM", mo.Name)
	default:
		return nil, "", fmt.Errorf("cluster %s has BackupSchedules %s: choose one with --schedule NAME", mo.Name, strings.Join(names, ", "))
	}
}

// RestoreOptions are the restore command's.
type RestoreOptions struct {
	// To names the new OBTenant. Required.
	To string
	// Cluster is the OBCluster the new tenant is made on. Default: the
	// source tenant's.
	Cluster string
	// UntilTime and UntilSCN are the restore point (one at most). Default:
	// as far as the archive reaches.
	UntilTime string
	UntilSCN  int64
	// Standby makes the new tenant a standby; ReplayArchive keeps it
	// replaying the archive.
	Standby, ReplayArchive bool
}

// Restore makes a new OBTenant, shaped as the source tenant (units,
// zones, primary zone, variables), restored from the destinations of the
// source tenant's OBTenantBackupPolicy and opened with its encryption
// Secret. The new tenant keeps the source's users, so it takes the
// source's root password Secret. A MatrixOne restore is a new cluster
// with its own empty shared storage: it is made by hand (spec.restoreFrom).
func (c *CLI) Restore(ctx context.Context, namespace, typ, name string, o RestoreOptions) error {
	gvk, obj, err := c.get(ctx, namespace, typ, name)
	if err != nil {
		return err
	}
	src, ok := obj.(*obv1.OBTenant)
	if !ok {
		return fmt.Errorf("%s: kubectl steward restore takes an OBTenant (a MatrixOne restore is a new MatrixOneCluster with spec.restoreFrom and empty shared storage of its own)", kindName(gvk, name))
	}
	switch {
	case o.To == "":
		return fmt.Errorf("name the new tenant with --to NAME")
	case o.UntilTime != "" && o.UntilSCN != 0:
		return fmt.Errorf("name one restore point: --until-time or --until-scn")
	}
	policy, err := c.backupPolicy(ctx, src)
	if err != nil {
		return err
	}
	t := restoredTenant(src, policy, o)
	what := fmt.Sprintf("a restore of the backups of tenant %s on cluster %s", src.Name, t.Spec.Cluster)
	if t.Spec.Source.Restore.Role == obv1.RestoreAsStandby {
		what += ", as a standby"
	}
	return c.created(ctx, t, what)
}

// restoredTenant is the OBTenant o asks for: src's shape (its tenantName
// and reclaim policy are the new tenant's own defaults), policy's
// destinations, and src's root password Secret, which the restored users
// need.
func restoredTenant(src *obv1.OBTenant, policy *obv1.OBTenantBackupPolicy, o RestoreOptions) *obv1.OBTenant {
	defaulted := src.DeepCopy()
	obv1.DefaultTenant(defaulted) // the root password Secret's default name
	restore := &obv1.OBTenantRestoreSource{
		Data:             policy.Spec.DataBackup.Destination,
		Archive:          policy.Spec.Archive.Destination,
		Role:             obv1.RestoreAsPrimary,
		DecryptionSecret: policy.Spec.DataBackup.EncryptionSecret,
		ReplayArchive:    o.ReplayArchive,
	}
	if o.Standby || o.ReplayArchive {
		restore.Role = obv1.RestoreAsStandby
	}
	if o.UntilTime != "" || o.UntilSCN != 0 {
		restore.Until = &obv1.RestorePoint{Time: o.UntilTime, SCN: o.UntilSCN}
	}
	s := src.Spec.DeepCopy()
	t := &obv1.OBTenant{
		ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: o.To},
		Spec: obv1.OBTenantSpec{Cluster: s.Cluster, Unit: s.Unit, UnitNum: s.UnitNum, Zones: s.Zones, PrimaryZone: s.PrimaryZone,
			Charset: s.Charset, ConnectWhiteList: s.ConnectWhiteList, Variables: s.Variables,
			RootPassword: defaulted.Spec.RootPassword, Source: &obv1.OBTenantSource{Restore: restore}},
	}
	if o.Cluster != "" {
		t.Spec.Cluster = o.Cluster
	}
	return t
}

// backupPolicy is t's OBTenantBackupPolicy: of two, the older, as
// admission and the controller hold.
func (c *CLI) backupPolicy(ctx context.Context, t *obv1.OBTenant) (*obv1.OBTenantBackupPolicy, error) {
	var list obv1.OBTenantBackupPolicyList
	if err := c.client.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return nil, fmt.Errorf("list OBTenantBackupPolicies: %w", err)
	}
	var found *obv1.OBTenantBackupPolicy
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.Tenant == t.Name && p.DeletionTimestamp == nil && (found == nil || framework.Older(p, found)) {
			found = p
		}
	}
	if found == nil {
		return nil, fmt.Errorf("tenant %s has no OBTenantBackupPolicy: its destinations (and OceanBase's log archive, which every backup and restore needs) come from one", t.Name)
	}
	return found, nil
}

// destination is how a backup destination is shown.
func destination(d obv1.BackupDestination) string {
	if d.S3 != nil {
		return fmt.Sprintf("%s (S3 at %s)", d.Path, d.S3.Endpoint)
	}
	return d.Path
}

// created creates obj and says what it is and how to follow it.
func (c *CLI) created(ctx context.Context, obj client.Object, what string) error {
	gvk, err := c.client.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	if err := c.client.Create(ctx, obj); err != nil {
		return fmt.Errorf("create %s: %w", kindName(gvk, obj.GetName()), err)
	}
	ref := kindName(gvk, obj.GetName())
	fmt.Fprintf(c.Out, "%s created: %s\n", ref, what)
	fmt.Fprintf(c.Out, "Follow it with: kubectl steward status %s -n %s\n", ref, obj.GetNamespace())
	return nil
}
