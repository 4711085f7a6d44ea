package matrixone

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// A backup destination that is a volume claim is served over S3 by a
// gateway (build.BackupGatewayDeployment) that runs while something needs
// it: every BackupJob and Backup naming the claim is one of the gateway's
// owners, so the garbage collector stops it once the last of them is gone,
// and a claim deleted meanwhile stays (Terminating) until then. The claim
// itself is the user's; its keys Secret goes with it.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;update

// EnvBackupGatewayImage is the operator's environment variable that
// overrides the backup gateway's image (mov1.DefaultBackupGatewayImage), as
// operators name the images they run besides their own.
const EnvBackupGatewayImage = "RELATED_IMAGE_MATRIXONE_BACKUP_GATEWAY"

// validateBackupVolumeClaim checks that the gateway over the claim can be
// named after it: its Service's name is a DNS label.
func validateBackupVolumeClaim(path *field.Path, claim string) field.ErrorList {
	if claim == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if errs := validation.IsDNS1035Label(build.BackupGatewayName(claim)); len(errs) > 0 {
		return field.ErrorList{field.Invalid(path, claim, fmt.Sprintf("the S3 gateway's Service %q is not a valid Service name: %s",
			build.BackupGatewayName(claim), errs[0]))}
	}
	return nil
}

// claimGoing reports whether the volume claim is gone or being deleted.
func claimGoing(ctx context.Context, r client.Reader, namespace, claim string) (bool, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, pvc); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get the volume claim %s: %w", claim, err)
	}
	return pvc.DeletionTimestamp != nil, nil
}

// backupGateways ensures the gateways over volume claims.
type backupGateways struct {
	// image is the gateway's image.
	image string
}

// ensure makes the gateway over claim, in owner's namespace, serve for
// owner: its keys Secret (once), and its Service and Deployment, owner
// among their owners. It returns why the gateway does not serve yet, ""
// once its pod is ready. It reads through r, the API server: Steward
// caches no Deployment.
func (g backupGateways) ensure(ctx context.Context, c client.Client, r client.Reader, owner client.Object, claim string) (string, error) {
	ns := owner.GetNamespace()
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, pvc); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the volume claim %s does not exist", claim), nil
	case err != nil:
		return "", fmt.Errorf("get the volume claim %s: %w", claim, err)
	}
	if why, err := ensureGatewayKeys(ctx, c, r, pvc); why != "" || err != nil {
		return why, err
	}
	ref, err := ownerRef(c, owner)
	if err != nil {
		return "", err
	}
	if why, err := ensureOwned(ctx, c, r, "Service", build.BackupGatewayService(ns, claim), &corev1.Service{}, ref); why != "" || err != nil {
		return why, err
	}
	deploy := &appsv1.Deployment{}
	if why, err := ensureOwned(ctx, c, r, "Deployment", build.BackupGatewayDeployment(ns, claim, g.image), deploy, ref); why != "" || err != nil {
		return why, err
	}
	if containers := deploy.Spec.Template.Spec.Containers; len(containers) == 1 && containers[0].Image != g.image {
		// The operator was upgraded to another gateway image.
		patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, containers[0].Name, g.image)
		if err := c.Patch(ctx, deploy, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return "", fmt.Errorf("set the image of the S3 gateway %s: %w", deploy.Name, err)
		}
	}
	if s := deploy.Status; s.ObservedGeneration < deploy.Generation || s.ReadyReplicas < 1 || s.UpdatedReplicas < 1 {
		return fmt.Sprintf("the S3 gateway %s over the volume claim %s is not ready", build.BackupGatewayName(claim), claim), nil
	}
	return "", nil
}

// ensureGatewayKeys creates the gateway's keys Secret, owned by the claim,
// unless it exists: the keys never change while the claim lives. It
// returns why a Secret of that name cannot be used: not Steward's.
func ensureGatewayKeys(ctx context.Context, c client.Client, r client.Reader, pvc *corev1.PersistentVolumeClaim) (string, error) {
	want := build.BackupGatewayKeys(pvc, "", "")
	got := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), got); {
	case err == nil:
		return foreign("Secret", want, got), nil
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("get the Secret %s: %w", want.Name, err)
	}
	// S3's shapes: a 20-character key ID, a 40-character secret.
	secret := build.BackupGatewayKeys(pvc, randomString(20, upperAlnum), randomString(40, alnum))
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create the Secret %s: %w", want.Name, err)
	}
	return "", nil
}

// foreign says why got, found where the gateway's want belongs, is not the
// gateway's: "" when it is.
func foreign(kind string, want, got client.Object) string {
	if l := got.GetLabels(); l[standard.LabelComponent] == build.ComponentBackupGateway && l[standard.LabelInstance] == want.GetLabels()[standard.LabelInstance] {
		return ""
	}
	return fmt.Sprintf("a %s %s exists that is not Steward's S3 gateway's over the volume claim: rename one of them", kind, want.GetName())
}

const (
	upperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	alnum      = upperAlnum + "abcdefghijklmnopqrstuvwxyz"
)

// randomString returns n characters of chars, from crypto/rand (the
// modulo's bias is a fraction of a bit per character).
func randomString(n int, chars string) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// ownerRef is owner as one of several owners: not the controller, and not
// blocking its deletion.
func ownerRef(c client.Client, owner client.Object) (metav1.OwnerReference, error) {
	gvk, err := apiutil.GVKForObject(owner, c.Scheme())
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID()}, nil
}

// ensureOwned creates want, owned by ref, unless it exists; an existing one
// (read into got) gets ref among its owners. One that Steward did not make
// is left alone, and the returned reason says so.
func ensureOwned(ctx context.Context, c client.Client, r client.Reader, kind string, want, got client.Object, ref metav1.OwnerReference) (string, error) {
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), got); {
	case apierrors.IsNotFound(err):
		want.SetOwnerReferences([]metav1.OwnerReference{ref})
		if err := c.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create the %s %s: %w", kind, want.GetName(), err)
		}
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get the %s %s: %w", kind, want.GetName(), err)
	}
	if why := foreign(kind, want, got); why != "" {
		return why, nil
	}
	if slices.ContainsFunc(got.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == ref.UID }) {
		return "", nil
	}
	// A strategic merge adds to the owners by UID, keeping the others'.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	if err != nil {
		return "", err
	}
	if err := c.Patch(ctx, got, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return "", fmt.Errorf("add %s %s to the owners of the %s %s: %w", ref.Kind, ref.Name, kind, want.GetName(), err)
	}
	return "", nil
}
