package matrixone_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// A BackupJob whose destination is a volume claim, against a real
// kube-apiserver: the operator makes the S3 gateway over the claim (its
// keys Secret, Service and Deployment) and waits for it. envtest runs no
// pod, so the gateway never serves here; the backup through it is the
// e2e's (test/e2e, the S3 spec).

// claimJob is a BackupJob of the cluster "mo" to the volume claim.
func claimJob(ns, name, claim string) *mov1.BackupJob {
	return &mov1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.BackupJobSpec{
		Cluster: "mo", Destination: mov1.BackupDestination{VolumeClaim: &mov1.BackupVolumeClaim{ClaimName: claim}}}}
}

// owners returns the names of obj's owners of kind, sorted.
func owners(obj client.Object, kind string) []string {
	var names []string
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == kind {
			names = append(names, o.Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestBackupJobToAVolumeClaim(t *testing.T) {
	c, ns, _, _ := readyClusterWith(t, func(o *matrixone.Options) { o.BackupGatewayImage = "localhost/versitygw:test" }, "cn")

	// No claim yet: the job says so and makes nothing.
	create(t, c, claimJob(ns, "first", "mo-backups"))
	// The job waits at check-destination, saying why in Ready; nothing
	// fails while it waits.
	waitFor := func(name, why string) {
		t.Helper()
		eventually(t, "the BackupJob "+name+" waiting", func() (bool, string) {
			j := &mov1.BackupJob{}
			get(t, c, ns, name, j)
			got := condition(j, framework.ConditionReady)
			op := j.Status.Operation
			return op != nil && op.Step == "check-destination" && op.Phase == commonv1.PhaseRunning && op.Attempts == 0 &&
				got == "False BackingUp: step check-destination: waiting for the destination: "+why, got
		})
	}
	waitFor("first", "the volume claim mo-backups does not exist")
	if get(t, c, ns, "mo-backups-s3", &corev1.Service{}) {
		t.Error("a gateway was made for a claim that does not exist")
	}

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mo-backups"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	create(t, c, pvc)
	waitFor("first", "the S3 gateway mo-backups-s3 over the volume claim mo-backups is not ready")

	// The keys, owned by the claim, in S3's shapes.
	keys := &corev1.Secret{}
	get(t, c, ns, "mo-backups-s3-keys", keys)
	if id, secret := keys.Data[build.EnvAccessKeyID], keys.Data[build.EnvSecretAccessKey]; len(id) != 20 || len(secret) != 40 ||
		!slices.Equal(owners(keys, "PersistentVolumeClaim"), []string{"mo-backups"}) {
		t.Errorf("the keys Secret: %d and %d characters, owners %v", len(id), len(secret), keys.OwnerReferences)
	}
	// The Service and the Deployment, owned by the job (not as their
	// controller): the gateway serves the claim from the image given.
	svc, deploy := &corev1.Service{}, &appsv1.Deployment{}
	get(t, c, ns, "mo-backups-s3", svc)
	get(t, c, ns, "mo-backups-s3", deploy)
	for _, obj := range []client.Object{svc, deploy} {
		if got := owners(obj, "BackupJob"); !slices.Equal(got, []string{"first"}) || metav1.GetControllerOf(obj) != nil {
			t.Errorf("the %T's owners: %v", obj, obj.GetOwnerReferences())
		}
	}
	pod := deploy.Spec.Template.Spec
	if pod.Containers[0].Image != "localhost/versitygw:test" || pod.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Volumes[0].PersistentVolumeClaim.ClaimName != "mo-backups" || deploy.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the gateway's Deployment: %+v", deploy.Spec)
	}

	// A Backup on the claim is an owner too: it keeps the gateway once the
	// jobs are gone, and says in Ready that the gateway does not serve.
	loc := build.BackupGatewayLocation(ns, "mo-backups")
	loc.KeyPrefix = ns + "/old"
	create(t, c, &mov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: mov1.BackupSpec{Location: loc, VolumeClaim: "mo-backups"}})
	eventually(t, "the Backup an owner of the gateway", func() (bool, string) {
		get(t, c, ns, "mo-backups-s3", deploy)
		b := &mov1.Backup{}
		get(t, c, ns, "old", b)
		got := condition(b, framework.ConditionReady)
		return slices.Equal(owners(deploy, "Backup"), []string{"old"}) && owners(deploy, "BackupJob") != nil &&
			strings.HasPrefix(got, "False GatewayNotReady: the S3 gateway mo-backups-s3 over the volume claim mo-backups is not ready"), got
	})
	if k := (&corev1.Secret{}); !get(t, c, ns, "mo-backups-s3-keys", k) || string(k.Data[build.EnvSecretAccessKey]) != string(keys.Data[build.EnvSecretAccessKey]) {
		t.Error("the keys changed")
	}

	// A Service of the gateway's name that is someone else's is left
	// alone, and the job says why.
	create(t, c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs-s3"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Spec: pvc.Spec})
	create(t, c, claimJob(ns, "theirs", "theirs"))
	remove(t, c, &mov1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}})
	waitFor("theirs", "a Service theirs-s3 exists that is not Steward's S3 gateway's over the volume claim: rename one of them")
	theirs := &corev1.Service{}
	get(t, c, ns, "theirs-s3", theirs)
	if len(theirs.OwnerReferences) > 0 || get(t, c, ns, "theirs-s3", &appsv1.Deployment{}) {
		t.Errorf("someone else's Service was taken over: owners %v", theirs.OwnerReferences)
	}
}
