package matrixone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// A LogSet with spec.restoreFrom starts as a restore of a Backup
// (docs/design/matrixone-data.md, "Restore into a new cluster"): before
// any store starts, the restore flow checks the Backup, checks the shared
// storage holds nothing, copies the backup's TAE files into its data/
// (a page per pass, resuming after status.restore.lastKey; server-side
// when the backup is in the same store, streamed through the operator
// when not),
// and HAKeeper's data into its restore/, which the stores' bootstrap
// reads (build.LogTemplate.Restore). Until status.restore.dataCopiedAt is
// set, Declare applies nothing: no store may start on storage being
// filled.

// The restore flow and its steps.
const (
	flowRestore = "restore"

	stepCheckBackup      = "check-backup"
	stepCheckTargetEmpty = "check-target-empty"
	stepCopyData         = "copy-data"
	stepCopyHAKeeper     = "copy-hakeeper-data"
)

// restoreCopyPage is how many objects one pass of copy-data lists, and
// restoreCopyTime how long it copies them for at most: the progress is
// recorded between passes.
const (
	restoreCopyPage = 200
	restoreCopyTime = 20 * time.Second
)

// The backup's layout (MatrixOne 1.2.4, pkg/backup): TAE files under
// tae/, HAKeeper's data under hakeeper/. tae_list and tae_sum (and their
// .sha256) describe the backup and are not TAE's.
const (
	backupTAEDir      = "tae"
	backupHAKeeperDir = "hakeeper"
)

// setRestoring says the set restores, and returns what the restore flow
// needs: the shared storage's location.
func setRestoring(ctx *LogContext, rendered *LogSet) (*logState, error) {
	l := ctx.Obj
	shared := rendered.Spec.SharedStorage.S3
	if shared == nil {
		return nil, framework.InvalidSpec(errors.New("spec.restoreFrom: the shared storage must be s3 or a bucketClaim"))
	}
	r := restoreOf(l)
	why := fmt.Sprintf("restoring from the Backup %s: %d objects (%d bytes) copied; the log stores start once the copy completes",
		l.Spec.RestoreFrom.Backup, r.ObjectsCopied, r.BytesCopied)
	ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, mov1.ReasonRestoring, why)
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, mov1.ReasonRestoring, why)
	ctx.SetReady(false, mov1.ReasonRestoring, why)
	return &logState{ns: l.Namespace, now: time.Now(), shared: shared}, nil
}

// restoring reports whether l still restores: its data is not copied yet,
// so no store may start.
func restoring(l *LogSet) bool {
	return l.Spec.RestoreFrom != nil && (l.Status.Restore == nil || l.Status.Restore.DataCopiedAt == nil)
}

// validateRestore checks what a restore needs of the spec: S3 shared
// storage (the copy writes objects; a filesystem would need MatrixOne's
// own file service to write it) and a root password Secret named (the
// restored catalog's root is the source's, and a generated password
// would never log in).
func validateRestore(spec *field.Path, from *mov1.RestoreSource, shared mov1.SharedStorage, rootPassword string) field.ErrorList {
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	if shared.FileSystem != nil {
		errs = append(errs, field.Forbidden(spec.Child("sharedStorage", "fileSystem"),
			"a restore copies the backup within its object store: the shared storage must be s3 or a bucketClaim"))
	}
	if rootPassword == "" {
		errs = append(errs, field.Required(spec.Child("rootPassword"),
			"a restored cluster's root is the source's: name the Secret holding the source cluster's root password"))
	}
	return append(errs, standard.ValidateObjectName(spec.Child("restoreFrom", "backup"), from.Backup, "Backup")...)
}

func (c *LogSetController) restoreFlow() framework.Flow[*LogSet, *logState] {
	return framework.Flow[*LogSet, *logState]{
		Name: flowRestore,
		Steps: []framework.Step[*LogSet, *logState]{
			{Name: stepCheckBackup, Run: c.checkBackup},
			{Name: stepCheckTargetEmpty, Run: c.checkTargetEmpty},
			{Name: stepCopyData, Run: c.copyData},
			{Name: stepCopyHAKeeper, Run: c.copyHAKeeper},
		},
	}
}

// restoreOf returns the LogSet's restore status, made when missing.
func restoreOf(l *LogSet) *mov1.RestoreStatus {
	if l.Status.Restore == nil {
		l.Status.Restore = &mov1.RestoreStatus{}
	}
	return l.Status.Restore
}

// backupOf returns the Backup the LogSet restores from, when it is Ready.
func backupOf(ctx context.Context, r client.Reader, l *LogSet) (*mov1.Backup, error) {
	b := &mov1.Backup{}
	name := l.Spec.RestoreFrom.Backup
	switch err := r.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, b); {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the Backup %s does not exist", name)
	case err != nil:
		return nil, fmt.Errorf("get the Backup %s: %w", name, err)
	}
	if ok, why := framework.IsReady(b); !ok {
		return nil, fmt.Errorf("the Backup %s is %s", name, why)
	}
	mov1.DefaultBackup(b)
	return b, nil
}

// checkBackup checks that the Backup is Ready and that the root password
// Secret exists; it records the backup's consistent point.
func (c *LogSetController) checkBackup(ctx *LogContext, _ *logState) (bool, error) {
	l := ctx.Obj
	b, err := backupOf(ctx, ctx.Client, l)
	if err != nil {
		return false, err
	}
	secret := &corev1.Secret{}
	if err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: l.RootPasswordSecret()}, secret); err != nil {
		return false, fmt.Errorf("the Secret %s of the source cluster's root password: %w", l.RootPasswordSecret(), err)
	}
	restoreOf(l).BackupTS = b.Status.BackupTS
	return true, nil
}

// checkTargetEmpty checks that nothing of a cluster is there yet: no
// volume claim of the set's stores (a LogSet deleted under Retain leaves
// them, and stores started on them would never bootstrap from the backup),
// no stores ConfigMap saying a bootstrap happened, and no object in the
// shared storage: a restore never writes into a cluster that holds data.
// Once the copy began, what is in the shared storage is the restore's own.
func (c *LogSetController) checkTargetEmpty(ctx *LogContext, st *logState) (bool, error) {
	l := ctx.Obj
	if r := restoreOf(l); r.LastKey != "" || r.ObjectsCopied > 0 {
		return true, nil
	}
	claims, err := logSet(l).Claims(ctx, ctx.Reader)
	if err != nil {
		return false, err
	}
	if len(claims) > 0 {
		first := claims[slices.Min(slices.Collect(maps.Keys(claims)))]
		return false, framework.Terminal(fmt.Errorf("the volume claim %s of an earlier LogSet %s exists: a restore never starts a store on a volume that holds data; delete the claims or restore under another name",
			first.Name, l.Name))
	}
	stores := &corev1.ConfigMap{}
	switch err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: build.LogStoresName(l)}, stores); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	case stores.Data[build.BootstrappedKey] != "":
		return false, framework.Terminal(fmt.Errorf("the ConfigMap %s says an earlier LogSet %s bootstrapped: a restore starts a new cluster; delete it or restore under another name",
			stores.Name, l.Name))
	}
	target, err := c.restoreClient(ctx, *st.shared)
	if err != nil {
		return false, err
	}
	empty, err := target.IsEmpty(ctx, "")
	switch {
	case err != nil:
		return false, err
	case !empty:
		return false, framework.Terminal(fmt.Errorf("%s holds objects: a restore never writes into storage that holds data",
			claimLocation(*st.shared)))
	}
	return true, nil
}

// copyData copies a page of the backup's TAE files into the shared
// storage's data/, after the last one copied; done once the listing ends.
func (c *LogSetController) copyData(ctx *LogContext, st *logState) (bool, error) {
	l := ctx.Obj
	r := restoreOf(l)
	b, err := backupOf(ctx, ctx.Client, l)
	if err != nil {
		return false, err
	}
	source, err := c.clients.client(ctx, ctx.Reader, b.Namespace, b.UID, b.Spec.Location)
	if err != nil {
		return false, err
	}
	target, err := c.restoreClient(ctx, *st.shared)
	if err != nil {
		return false, err
	}
	lctx, cancel := context.WithTimeout(ctx, claimS3Timeout)
	defer cancel()
	page, err := source.ListPrefix(lctx, backupTAEDir, s3.ListOptions{After: r.LastKey, PageSize: restoreCopyPage})
	if err != nil {
		return false, err
	}
	from := source.Location().Root() + backupTAEDir + "/"
	// A pass copies for at most restoreCopyTime, each copy bounded on its
	// own, and records how far it got: large objects make short passes,
	// never failed ones.
	stop := time.Now().Add(restoreCopyTime)
	for i, o := range page.Objects {
		if i > 0 && time.Now().After(stop) {
			return false, nil
		}
		rel := strings.TrimPrefix(o.Key, from)
		if name := path.Base(rel); rel == name && (strings.HasPrefix(name, "tae_list") || strings.HasPrefix(name, "tae_sum")) {
			r.LastKey = o.Key // the backup's own description, not TAE's
			continue
		}
		if err := copyObject(ctx, source, target, o, "data/"+rel); err != nil {
			return false, err
		}
		r.LastKey, r.ObjectsCopied, r.BytesCopied = o.Key, r.ObjectsCopied+1, r.BytesCopied+o.Size
	}
	if page.Next != "" {
		ctx.Log.V(1).Info("Copied a page of the backup", "objects", r.ObjectsCopied, "bytes", r.BytesCopied)
		return false, nil
	}
	ctx.Log.Info("Copied the backup's table data", "backup", b.Name, "objects", r.ObjectsCopied, "bytes", r.BytesCopied)
	return true, nil
}

// copyHAKeeper copies the backup's HAKeeper data (and its checksum) to
// the shared storage's restore/, where the stores' bootstrap reads it,
// and then lets the stores start.
func (c *LogSetController) copyHAKeeper(ctx *LogContext, st *logState) (bool, error) {
	l := ctx.Obj
	b, err := backupOf(ctx, ctx.Client, l)
	if err != nil {
		return false, err
	}
	source, err := c.clients.client(ctx, ctx.Reader, b.Namespace, b.UID, b.Spec.Location)
	if err != nil {
		return false, err
	}
	target, err := c.restoreClient(ctx, *st.shared)
	if err != nil {
		return false, err
	}
	root := source.Location().Root()
	for _, f := range []string{build.HAKeeperDataFile, build.HAKeeperDataFile + ".sha256"} {
		o := s3.Object{Key: root + backupHAKeeperDir + "/" + f}
		if err := copyObject(ctx, source, target, o, path.Join(build.RestoreDir, f)); err != nil {
			return false, err
		}
	}
	r := restoreOf(l)
	r.DataCopiedAt = &metav1.Time{Time: time.Now()}
	ctx.Event(corev1.EventTypeNormal, mov1.EventRestoreDataCopied, "Copied %d objects (%d bytes) of the Backup %s, consistent at %s: the log stores start",
		r.ObjectsCopied, r.BytesCopied, b.Name, r.BackupTS)
	c.clients.forget(l.UID)
	c.clients.forget(b.UID)
	return true, nil
}

// restoreCopyRate is the slowest a copy between two stores is allowed to
// stream, which bounds how long one object may take.
const restoreCopyRate = 1 << 20 // bytes a second

// copyObject copies the source's object o to name of target's location:
// server-side within one store, so the data never passes through the
// operator; streamed through it between two (a backup in one store
// restored into a cluster on another), given claimS3Timeout and a second
// for each restoreCopyRate bytes of o's size.
func copyObject(ctx context.Context, source, target *s3.Client, o s3.Object, name string) error {
	if s3.SameStore(source.Location(), target.Location()) {
		cctx, cancel := context.WithTimeout(ctx, claimS3Timeout)
		defer cancel()
		return target.CopyFrom(cctx, source.Location().Bucket, o.Key, name)
	}
	cctx, cancel := context.WithTimeout(ctx, claimS3Timeout+time.Duration(o.Size/restoreCopyRate)*time.Second)
	defer cancel()
	_, err := source.CopyTo(cctx, o.Key, target, name)
	return err
}

// restoreClient is the client of the shared storage, with its
// credentials.
func (c *LogSetController) restoreClient(ctx *LogContext, shared mov1.S3Storage) (*s3.Client, error) {
	return c.clients.client(ctx, ctx.Reader, ctx.Obj.Namespace, ctx.Obj.UID, shared)
}
