package build

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// A volume claim that holds backups (BackupDestination.volumeClaim) is
// served over S3 by a gateway of Steward's: versitygw's POSIX backend over
// the claim, one pod, its root keys generated into a Secret that the claim
// owns. MatrixOne's BACKUP writes to it as to any store, and every later
// read (a Backup's status, a restore's copy) goes through it.

// ComponentBackupGateway is the component of a backup gateway's objects.
const ComponentBackupGateway = "backup-gateway"

// The gateway's bucket, region and port. The bucket is a directory of the
// claim's volume, made by the first backup.
const (
	BackupGatewayBucket = "backups"
	BackupGatewayRegion = "us-east-1"
	backupGatewayPort   = 7070
	backupGatewayHealth = "/health"
	backupGatewayUser   = 65532
)

// backupGatewayMemory is the gateway's memory limit: versitygw streams
// objects, and MatrixOne's BACKUP writes 50 at once.
var backupGatewayMemory = resource.MustParse("256Mi")

// BackupGatewayName names the Deployment and Service of the gateway over
// the claim.
func BackupGatewayName(claim string) string { return claim + "-s3" }

// BackupGatewayKeysName names the Secret of the gateway's root keys.
func BackupGatewayKeysName(claim string) string { return claim + "-s3-keys" }

// BackupGatewayLocation is the S3 location of the gateway over the claim
// in namespace: its Service, its bucket, its keys.
func BackupGatewayLocation(namespace, claim string) mov1.S3Storage {
	return mov1.S3Storage{
		Endpoint: fmt.Sprintf("http://%s.%s.svc:%d", BackupGatewayName(claim), namespace, backupGatewayPort),
		Region:   BackupGatewayRegion, Bucket: BackupGatewayBucket, PathStyle: true,
		CredentialsSecret: BackupGatewayKeysName(claim),
	}
}

// BackupDestinationS3 is the S3 location a destination in namespace
// writes to: its s3, or its volume claim's gateway.
func BackupDestinationS3(namespace string, d mov1.BackupDestination) mov1.S3Storage {
	if d.VolumeClaim != nil {
		return BackupGatewayLocation(namespace, d.VolumeClaim.ClaimName)
	}
	if d.S3 == nil {
		return mov1.S3Storage{}
	}
	return *d.S3.DeepCopy()
}

// BackupGatewayKeys is the Secret of the gateway's root keys, owned by
// the claim: the keys live as long as the objects they sign for.
func BackupGatewayKeys(claim *corev1.PersistentVolumeClaim, accessKeyID, secretAccessKey string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: claim.Namespace, Name: BackupGatewayKeysName(claim.Name),
			Labels: Labels(claim.Name, ComponentBackupGateway),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Name: claim.Name, UID: claim.UID}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{EnvAccessKeyID: []byte(accessKeyID), EnvSecretAccessKey: []byte(secretAccessKey)},
	}
}

// BackupGatewayService is the gateway's Service: the location's endpoint.
func BackupGatewayService(namespace, claim string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: BackupGatewayName(claim), Labels: Labels(claim, ComponentBackupGateway)},
		Spec: corev1.ServiceSpec{
			Selector: Selector(claim, ComponentBackupGateway),
			Ports: []corev1.ServicePort{{Name: "s3", Port: backupGatewayPort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString("s3")}},
		},
	}
}

// BackupGatewayDeployment is the gateway: versitygw from image serving
// the claim's volume, in single-account mode (no IAM, admin API or event
// sinks: nothing leaves the cluster). One pod, replaced by stopping the
// old one first: the claim may be ReadWriteOnce.
func BackupGatewayDeployment(namespace, claim, image string) *appsv1.Deployment {
	labels := Labels(claim, ComponentBackupGateway)
	keys := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: BackupGatewayKeysName(claim)}, Key: key}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: BackupGatewayName(claim), Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: Selector(claim, ComponentBackupGateway)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](backupGatewayUser), RunAsGroup: ptr.To[int64](backupGatewayUser),
						FSGroup:        ptr.To[int64](backupGatewayUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name: "versitygw", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Args: []string{"--port", fmt.Sprintf(":%d", backupGatewayPort), "--region", BackupGatewayRegion,
							"--quiet", "--health", backupGatewayHealth, "posix", "/data"},
						Env: []corev1.EnvVar{
							{Name: "ROOT_ACCESS_KEY_ID", ValueFrom: keys(EnvAccessKeyID)},
							{Name: "ROOT_SECRET_ACCESS_KEY", ValueFrom: keys(EnvSecretAccessKey)},
						},
						Ports: []corev1.ContainerPort{standard.ContainerPort("s3", backupGatewayPort)},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: backupGatewayHealth, Port: intstr.FromString("s3")}},
							PeriodSeconds: 2,
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: backupGatewayMemory},
						},
						SecurityContext: standard.RestrictedContainer(),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "data", MountPath: "/data"},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// backupKeyPrefix is the key prefix a destination's backups go under.
func backupKeyPrefix(d mov1.BackupDestination) string {
	if d.S3 == nil {
		return ""
	}
	return strings.Trim(d.S3.KeyPrefix, "/")
}
