package matrixone

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// The Backup controller's RBAC, on top of the system's: it reads the
// credentials Secrets (get) and the BackupJob controller creates Backups.
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backups,verbs=get;list;watch;create;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backups/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=backups/finalizers,verbs=update

// Resyncs of the Backup controller: a backup's objects change only when
// someone outside writes or deletes them, so a complete one is read again
// every 10 minutes (each read lists every object), an incomplete one
// every 30 seconds.
const (
	backupResync         = 10 * time.Minute
	backupResyncNotReady = 30 * time.Second
	// backupSummaryLimit bounds the tae_sum read: one CSV line.
	backupSummaryLimit = 4096
)

// backupFiles are the keys, under a backup's path, that every complete
// backup of MatrixOne 1.2.4 holds; BACKUP writes tae_sum last of the TAE
// files, and the metas after it.
var backupFiles = []string{"mo_meta", "hakeeper/hk_data", "hakeeper/hk_data.sha256", build.BackupSummaryFile}

// Backup is the kind the Backup controller reconciles.
type Backup = mov1.Backup

// BackupContext is the framework's pass context of a Backup.
type BackupContext = framework.Context[*Backup]

// BackupController is the Backup actor. Declare reads what the store
// holds under the backup's path into status (objects, size, MatrixOne's
// consistent point) and Ready (complete or not); Finalize deletes the
// objects under deletionPolicy Delete. A Backup is a record: nothing in
// the cluster acts on it, so Observe has nothing to do.
type BackupController struct {
	opts     Options
	clients  *s3Clients
	gateways backupGateways
}

// NewBackupController returns a Backup controller with opts.
func NewBackupController(opts Options) *BackupController {
	opts = opts.withDefaults()
	return &BackupController{opts: opts, clients: newS3Clients(), gateways: backupGateways{image: opts.BackupGatewayImage}}
}

func setupBackups(mgr ctrl.Manager, c *BackupController) error {
	_, err := framework.Setup(mgr, framework.Options[*Backup, framework.Nothing]{
		Actor: c, App: build.App, PartOf: build.PartOf,
		Resync: backupResync, ResyncNotReady: backupResyncNotReady,
	})
	return err
}

// Default applies the API's defaults (mov1.DefaultBackup).
func (*BackupController) Default(b *Backup) { mov1.DefaultBackup(b) }

// Validate checks the location as a LogSet's shared storage is checked
// (validateS3); its key prefix must not be empty.
func (*BackupController) Validate(b *Backup) error {
	path := field.NewPath("spec", "location")
	errs := validateS3(path, &b.Spec.Location)
	if strings.Trim(b.Spec.Location.KeyPrefix, "/") == "" {
		errs = append(errs, field.Required(path.Child("keyPrefix"), "a backup is a directory, never a bucket's root"))
	}
	if claim := b.Spec.VolumeClaim; claim != "" {
		errs = append(errs, validateBackupVolumeClaim(field.NewPath("spec", "volumeClaim"), claim)...)
		want := build.BackupGatewayLocation(b.Namespace, claim)
		want.KeyPrefix = b.Spec.Location.KeyPrefix
		if b.Spec.Location != want {
			errs = append(errs, field.Invalid(path, claimLocation(b.Spec.Location).String(),
				fmt.Sprintf("a backup on the volume claim %s is in its S3 gateway's bucket: endpoint %s, region %s, bucket %s, pathStyle, credentialsSecret %s",
					claim, want.Endpoint, want.Region, want.Bucket, want.CredentialsSecret)))
		}
	}
	return errs.ToAggregate()
}

// gatewayServes makes the S3 gateway of the Backup's volume claim, if it is
// on one, serve for it; it returns false, and says why in Ready, while it
// does not.
func (c *BackupController) gatewayServes(ctx *BackupContext) (bool, error) {
	b := ctx.Obj
	if b.Spec.VolumeClaim == "" {
		return true, nil
	}
	why, err := c.gateways.ensure(ctx, ctx.Client, ctx.Reader, b, b.Spec.VolumeClaim)
	if why != "" {
		ctx.SetReady(false, mov1.ReasonGatewayNotReady, why)
	}
	return why == "" && err == nil, err
}

// backupContents is what a listing of a backup's path found.
type backupContents struct {
	objects, bytes int64
	// missing are the backupFiles not found.
	missing []string
}

// listBackup lists every object under cl's location and returns their
// count and size, and which of backupFiles are missing.
func listBackup(ctx context.Context, cl *s3.Client) (backupContents, error) {
	var out backupContents
	found := map[string]bool{}
	root := cl.Location().Root()
	for after := ""; ; {
		page, err := cl.ListPrefix(ctx, "", s3.ListOptions{After: after})
		if err != nil {
			return out, err
		}
		for _, o := range page.Objects {
			out.objects++
			out.bytes += o.Size
			found[strings.TrimPrefix(o.Key, root)] = true
		}
		if after = page.Next; after == "" {
			break
		}
	}
	for _, f := range backupFiles {
		if !found[f] {
			out.missing = append(out.missing, f)
		}
	}
	return out, nil
}

// Declare reads the backup from the store: it lists its objects, reads
// its tae_sum, and says in Ready whether it is complete. What the store
// could not be asked leaves status as last read, and Ready says why.
func (c *BackupController) Declare(ctx *BackupContext) (framework.Nothing, error) {
	b := ctx.Obj
	if ok, err := c.gatewayServes(ctx); !ok || err != nil {
		return framework.Nothing{}, err
	}
	cl, why, err := c.clients.forLocation(ctx, ctx.Reader, b.Namespace, b.UID, b.Spec.Location)
	if err != nil {
		return framework.Nothing{}, err
	}
	if why != "" {
		ctx.SetReady(false, mov1.ReasonCredentialsMissing, why)
		return framework.Nothing{}, nil
	}
	sctx, cancel := context.WithTimeout(ctx, claimS3Timeout)
	defer cancel()
	where := claimLocation(b.Spec.Location).String()
	contents, err := listBackup(sctx, cl)
	if err != nil {
		ctx.SetReady(false, mov1.ReasonBucketUnreachable, err.Error())
		return framework.Nothing{}, nil
	}
	s := &b.Status
	s.Objects, s.SizeBytes = contents.objects, contents.bytes
	if len(contents.missing) > 0 {
		ctx.SetReady(false, mov1.ReasonBackupIncomplete, fmt.Sprintf("%s holds %d objects and no %s: the backup is not complete",
			where, contents.objects, strings.Join(contents.missing, " and no ")))
		return framework.Nothing{}, nil
	}
	data, err := cl.Get(sctx, build.BackupSummaryFile, backupSummaryLimit)
	if err != nil {
		ctx.SetReady(false, mov1.ReasonBucketUnreachable, err.Error())
		return framework.Nothing{}, nil
	}
	sum, err := build.ParseBackupSummary(data)
	if err != nil {
		ctx.SetReady(false, mov1.ReasonBackupIncomplete, fmt.Sprintf("%s: %v", where, err))
		return framework.Nothing{}, nil
	}
	s.BackupTS, s.BackupTime = sum.TS, nil
	if t, err := time.Parse(time.DateTime, sum.Time); err == nil {
		s.BackupTime = &metav1.Time{Time: t}
	}
	if sum.Type != "" {
		ctx.SetReady(false, mov1.ReasonBackupIncremental, fmt.Sprintf("%s is a backup of type %q: a restore starts only from a full backup", where, sum.Type))
		return framework.Nothing{}, nil
	}
	ctx.SetReady(true, "", fmt.Sprintf("%d objects, %d bytes, consistent at %s, in %s",
		contents.objects, contents.bytes, sum.TS, where))
	return framework.Nothing{}, nil
}

// Observe has nothing to do: the Backup is a record.
func (*BackupController) Observe(*BackupContext, framework.Nothing) (framework.Action[*Backup], error) {
	return nil, nil
}

// Finalize deletes the backup's objects under deletionPolicy Delete, a
// few batches a pass (as a BucketClaim's prefix is emptied), once no
// LogSet restores from it, and keeps them under Retain.
func (c *BackupController) Finalize(ctx *BackupContext) (bool, error) {
	b := ctx.Obj
	where := claimLocation(b.Spec.Location).String()
	if b.Spec.DeletionPolicy != commonv1.ReclaimDelete {
		ctx.Event(corev1.EventTypeNormal, mov1.EventObjectsKept, "Kept the backup's objects under %s: deletionPolicy Retain", where)
		c.clients.forget(b.UID)
		return true, nil
	}
	// A restore copying from the backup keeps its objects until its copy
	// is done.
	var logSets mov1.LogSetList
	if err := ctx.Client.List(ctx, &logSets, client.InNamespace(b.Namespace)); err != nil {
		return false, fmt.Errorf("list LogSets: %w", err)
	}
	for i := range logSets.Items {
		if l := &logSets.Items[i]; restoring(l) && l.Spec.RestoreFrom.Backup == b.Name {
			ctx.SetReady(false, mov1.ReasonDeletionBlocked, fmt.Sprintf("the LogSet %s restores from the backup: its objects are deleted once the copy is done", l.Name))
			return false, nil
		}
	}
	failed := func(why string) (bool, error) {
		ctx.SetReady(false, mov1.ReasonEmptying, fmt.Sprintf("deleting the objects under %s: %s (set deletionPolicy Retain to let the Backup go with its objects)", where, why))
		return false, nil
	}
	if claim := b.Spec.VolumeClaim; claim != "" {
		// A claim that is gone, or going (its namespace deleted, say),
		// takes the backup's objects with it; no gateway could be made to
		// delete them.
		if going, err := claimGoing(ctx, ctx.Reader, b.Namespace, claim); going || err != nil {
			if going {
				ctx.Event(corev1.EventTypeNormal, mov1.EventVolumeClaimGone, "The volume claim %s is gone or being deleted: the backup's objects go with its volume", claim)
				c.clients.forget(b.UID)
			}
			return going, err
		}
		why, err := c.gateways.ensure(ctx, ctx.Client, ctx.Reader, b, claim)
		if why != "" || err != nil {
			return failed(cmp.Or(why, fmt.Sprint(err)))
		}
	}
	cl, why, err := c.clients.forLocation(ctx, ctx.Reader, b.Namespace, b.UID, b.Spec.Location)
	if err != nil {
		return false, err
	}
	if why != "" {
		return failed(why)
	}
	res, err := deletePass(ctx, cl, c.opts)
	if err != nil {
		return failed(err.Error())
	}
	if !res.Done {
		ctx.SetReady(false, mov1.ReasonEmptying, fmt.Sprintf("deleting the objects under %s: %d deleted in this pass", where, res.Objects))
		return false, nil
	}
	ctx.Log.Info("Deleted the backup's objects", "location", where)
	ctx.Event(corev1.EventTypeNormal, mov1.EventBackupDeleted, "Deleted every object under %s (deletionPolicy Delete)", where)
	c.clients.forget(b.UID)
	return true, nil
}
