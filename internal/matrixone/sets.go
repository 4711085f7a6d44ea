package matrixone

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// What every MatrixOne set's controller shares.

// validatePodSet checks what every set's pods share: the image reference
// and the role's pods (validateRole).
func validatePodSet(spec *field.Path, role build.Role, s *mov1.PodSetSpec) field.ErrorList {
	return append(standard.ValidateImage(spec.Child("image"), s.Image), validateRole(spec, role, &s.RoleSpec)...)
}

// validateRole checks a role's pods: the user's TOML for role
// (build.CheckUser: it parses, and sets no key the operator owns, each
// refused with its reason), and each resource request within its limit
// (Kubernetes would reject the pods).
func validateRole(spec *field.Path, role build.Role, s *mov1.RoleSpec) field.ErrorList {
	var errs field.ErrorList
	for _, err := range build.CheckUser(role, s.Config) {
		errs = append(errs, field.Invalid(spec.Child("config"), "", err.Error()))
	}
	return append(errs, standard.ValidateResources(spec.Child("resources"), s.Resources)...)
}

// validateSharedStorage checks what the schema cannot: a shared filesystem
// claim Steward makes needs a positive size (the API server would refuse
// the claim on every pass); the claim's, its class's, the S3
// credentials Secret's and the BucketClaim's names must be names such
// objects can have (the sets would wait for them forever); an S3 bucket
// and endpoint must be ones S3 takes (validateS3).
func validateSharedStorage(path *field.Path, s mov1.SharedStorage) field.ErrorList {
	var errs field.ErrorList
	if fs := s.FileSystem; fs != nil {
		p := path.Child("fileSystem")
		errs = append(errs, standard.ValidateObjectName(p.Child("claimName"), fs.ClaimName, "PersistentVolumeClaim")...)
		if fs.Size != nil && fs.Size.Sign() <= 0 {
			errs = append(errs, field.Invalid(p.Child("size"), fs.Size.String(), "must be positive"))
		}
		if fs.StorageClassName != nil {
			errs = append(errs, standard.ValidateObjectName(p.Child("storageClassName"), *fs.StorageClassName, "StorageClass")...)
		}
	}
	if s.S3 != nil {
		errs = append(errs, validateS3(path.Child("s3"), s.S3)...)
	}
	if s.BucketClaim != "" {
		errs = append(errs, standard.ValidateObjectName(path.Child("bucketClaim"), s.BucketClaim, "BucketClaim")...)
	}
	if t := s.BucketClaimTemplate; t != nil {
		if s.BucketClaim == "" {
			errs = append(errs, field.Required(path.Child("bucketClaim"), "bucketClaimTemplate is the spec of the BucketClaim that bucketClaim names"))
		}
		errs = append(errs, validateS3(path.Child("bucketClaimTemplate", "s3"), &t.S3)...)
	}
	return errs
}

// admitBucketClaimTemplate refuses, at admission, a shared storage whose
// bucketClaimTemplate would make a claim (none has its name yet) that
// overlaps another claim, in any namespace: the claim's own admission
// would refuse it, and the set would wait for it forever.
func admitBucketClaimTemplate(ctx context.Context, r client.Reader, namespace string, path *field.Path, s mov1.SharedStorage) error {
	t := s.BucketClaimTemplate
	if t == nil || s.BucketClaim == "" {
		return nil
	}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.BucketClaim}, &mov1.BucketClaim{}); {
	case err == nil:
		return nil // used as it is
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get the BucketClaim %s: %w", s.BucketClaim, err)
	}
	claim := &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s.BucketClaim}, Spec: *t.DeepCopy()}
	return refuseOverlap(ctx, r, claim, func(*BucketClaim) bool { return true }, path.Child("bucketClaimTemplate", "s3", "keyPrefix"))
}

// validateS3 checks an S3 location: the endpoint a URL with a host, the
// bucket named by S3's rules, the credentials a Secret's name; an
// endpoint that is an IP address needs pathStyle (virtual-hosted requests
// would go to bucket.<address>, which no resolver knows); the CA Secret a
// Secret's name and key, for an https endpoint (a CA means nothing to
// plain HTTP, and would only hide a wrong scheme).
func validateS3(path *field.Path, loc *mov1.S3Storage) field.ErrorList {
	errs := standard.ValidateEndpoint(path.Child("endpoint"), loc.Endpoint, "http", "https")
	u, err := url.Parse(loc.Endpoint)
	if len(errs) == 0 && err == nil && !loc.PathStyle && net.ParseIP(u.Hostname()) != nil {
		errs = append(errs, field.Invalid(path.Child("pathStyle"), loc.PathStyle,
			"the endpoint is an IP address: virtual-hosted-style requests would put the bucket in front of it as a host name; set pathStyle"))
	}
	if why := s3.BucketNameError(loc.Bucket); why != "" {
		errs = append(errs, field.Invalid(path.Child("bucket"), loc.Bucket, why))
	}
	errs = append(errs, standard.ValidateObjectName(path.Child("credentialsSecret"), loc.CredentialsSecret, "Secret")...)
	if ca := loc.CASecret; ca != nil {
		p := path.Child("caSecret")
		if ca.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the Secret holding the CA certificates"))
		}
		errs = append(errs, standard.ValidateObjectName(p.Child("name"), ca.Name, "Secret")...)
		// Empty is the default key (the schema fills it in).
		for _, msg := range validation.IsConfigMapKey(cmp.Or(ca.Key, mov1.DefaultCAKey)) {
			errs = append(errs, field.Invalid(p.Child("key"), ca.Key, "not a valid Secret key: "+msg))
		}
		if err == nil && u.Scheme != "https" {
			errs = append(errs, field.Invalid(p, ca.Name, "a CA is for an https endpoint; the endpoint is "+loc.Endpoint))
		}
	}
	return errs
}

// revisionPending says why a set cannot yet tell which of its pods are
// stale: its StatefulSet's controller has not observed the latest pod
// template (a set that reported Ready meanwhile would let a
// MatrixOneCluster pass the next set its change before this one
// restarted: found by the e2e). Empty when it has.
func revisionPending(sts *appsv1.StatefulSet) string {
	if sts == nil || workload.RevisionKnown(sts) {
		return ""
	}
	return fmt.Sprintf("the StatefulSet %s has not computed the revision of generation %d yet", sts.Name, sts.Generation)
}

// sharedStorageMissing says why a set's pods cannot start yet for want of
// the shared filesystem's claim; empty when it exists, or the storage is
// S3. The claim is the user's, outside the manager's cache (which holds
// only Steward's claims), so it is read from the API server.
func sharedStorageMissing(ctx context.Context, r client.Reader, namespace string, s mov1.SharedStorage) (string, error) {
	if s.FileSystem == nil {
		return "", nil
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.FileSystem.ClaimName}, &corev1.PersistentVolumeClaim{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("waiting for the shared storage's PersistentVolumeClaim %s", s.FileSystem.ClaimName), nil
	case err != nil:
		return "", fmt.Errorf("get the shared storage's claim %s: %w", s.FileSystem.ClaimName, err)
	}
	return "", nil
}

// setWaitingForStorage says on a set's conditions that it waits for its
// shared storage (resolveSharedStorage's reason and why): not Available,
// Progressing, not Ready.
func setWaitingForStorage[T framework.Object](ctx *framework.Context[T], reason, why string) {
	ctx.SetCondition(commonv1.ConditionAvailable, metav1.ConditionFalse, reason, why)
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, reason, why)
	ctx.SetReady(false, reason, why)
}

// resolveSharedStorage returns l as its pods are rendered: when its shared
// storage is a BucketClaim, a copy of l whose sharedStorage.s3 is the
// claim's location (bucketClaim kept, which labels the pods), otherwise l
// itself. It is the one place that reads the claim for the LogSet and for
// the sets of its cluster, which render the same storage. When the claim
// cannot serve l yet, it returns nil and why, with the reason of the
// set's conditions: ReasonWaitingForSharedStorage while the claim does not
// exist or is not bound yet, ReasonBucketClaimInUse when it is bound to
// another LogSet (by UID: one re-created under l's name is another), in
// Conflict, or being deleted before it bound l. A claim bound to l that
// is being deleted serves on: its deletion waits for l to go.
func resolveSharedStorage(ctx context.Context, r client.Reader, l *mov1.LogSet) (_ *mov1.LogSet, reason, why string, _ error) {
	name := l.Spec.SharedStorage.BucketClaim
	if name == "" {
		return l, "", "", nil
	}
	claim := &mov1.BucketClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, claim); {
	case apierrors.IsNotFound(err):
		return nil, mov1.ReasonWaitingForSharedStorage, fmt.Sprintf("waiting for the BucketClaim %s", name), nil
	case err != nil:
		return nil, "", "", fmt.Errorf("get the BucketClaim %s: %w", name, err)
	}
	switch b := claim.Status.BoundTo; {
	case claim.BoundToLogSet(l):
	case claim.Status.Phase == mov1.BucketClaimConflict:
		return nil, mov1.ReasonBucketClaimInUse, fmt.Sprintf("the BucketClaim %s overlaps an older claim (phase Conflict): it serves no LogSet", name), nil
	case !claim.DeletionTimestamp.IsZero():
		return nil, mov1.ReasonBucketClaimInUse, fmt.Sprintf("the BucketClaim %s is being deleted", name), nil
	case b != nil && claim.Status.Phase == mov1.BucketClaimBound:
		return nil, mov1.ReasonBucketClaimInUse, fmt.Sprintf("the BucketClaim %s is bound to the LogSet %s (UID %s): a claim serves one LogSet for life", name, b.Name, b.UID), nil
	default:
		return nil, mov1.ReasonWaitingForSharedStorage, fmt.Sprintf("waiting for the BucketClaim %s to bind to this LogSet (phase %s)", name, cmp.Or(string(claim.Status.Phase), "unset")), nil
	}
	mov1.DefaultBucketClaim(claim)
	resolved := l.DeepCopy()
	resolved.Spec.SharedStorage.S3 = claim.Spec.S3.DeepCopy()
	return resolved, "", "", nil
}

// deleteClaims deletes the volume claims of set (reclaim policy Delete),
// recording an Event for each.
func deleteClaims[T framework.Object](ctx *framework.Context[T], set workload.Set) (bool, error) {
	claims, err := set.Claims(ctx, ctx.Client)
	if err != nil {
		return false, err
	}
	deleted, err := workload.DeleteClaims(ctx, ctx.Client, claims, func(int) bool { return true })
	for _, name := range deleted {
		ctx.Event(corev1.EventTypeNormal, commonv1.EventVolumeDeleted, "Deleted the volume claim %s (reclaimPolicy Delete)", name)
	}
	if err != nil {
		return false, fmt.Errorf("delete the volume claims: %w", err)
	}
	return true, nil
}
