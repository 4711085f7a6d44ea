package build

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// ComponentBackup is the component of a BackupJob's Job, whose pod runs
// MatrixOne's BACKUP, and of the Backup it records.
const ComponentBackup = "backup"

// LabelBackupSchedule is on the BackupJobs a BackupSchedule creates and on
// the Backups they record, with the schedule's name.
const LabelBackupSchedule = "matrixone.steward.dev/backup-schedule"

// EnvRootPassword is mo-agent backup's environment variable of root's
// password (tools/mo-agent/backupcmd.go).
const EnvRootPassword = "MO_PASSWORD"

// backupMemory is the backup pod's memory request and limit: mo-agent
// initializes MatrixOne's packages (about 50 MiB) and then waits on one
// SQL statement; the copying is the CN's.
var backupMemory = resource.MustParse("128Mi")

// BackupPath returns the key prefix, in the destination's bucket, the job
// j writes its backup under: "<keyPrefix>/<namespace>/<name>-<first 8 of
// its UID>", so that two jobs, even of one name re-created, never share
// one.
func BackupPath(j *mov1.BackupJob) string {
	uid := strings.ReplaceAll(string(j.UID), "-", "")
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return path.Join(backupKeyPrefix(j.Spec.Destination), j.Namespace, j.Name+"-"+uid)
}

// BackupJobName names the Job of a BackupJob.
func BackupJobName(j *mov1.BackupJob) string { return j.Name + "-backup" }

// BackupJobPod returns the Job whose one pod runs a full backup of c to
// BackupPath(j), with mo-agent backup from c's image, through c's SQL
// Service as root: no retry (a failed attempt leaves a partial backup
// there; the flow reports it), no longer than spec.timeout.
func BackupJobPod(j *mov1.BackupJob, c *mov1.MatrixOneCluster) *batchv1.Job {
	dst := BackupDestinationS3(j.Namespace, j.Spec.Destination)
	timeout := j.Spec.Timeout.Duration
	args := []string{"backup", "--addr", c.Status.SQLAddress, "--endpoint", dst.Endpoint, "--region", dst.Region,
		"--bucket", dst.Bucket, "--path", BackupPath(j), "--timeout", timeout.String()}
	if dst.PathStyle {
		args = append(args, "--path-style")
	}
	env := append([]corev1.EnvVar{{Name: EnvRootPassword, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: c.Status.RootPasswordSecret}, Key: PasswordKey}}}},
		s3CredentialsEnv(dst.CredentialsSecret)...)
	labels := Labels(j.Name, ComponentBackup)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: BackupJobName(j), Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			// The pod's own deadline a little past the statement's, so
			// that mo-agent reports a timeout before the Job kills it.
			ActiveDeadlineSeconds: ptr.To(int64(timeout.Seconds()) + 60),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity(),
					Containers: []corev1.Container{{
						Name: ComponentBackup, Image: c.Spec.Image, ImagePullPolicy: c.Spec.ImagePullPolicy,
						Command: []string{"/mo-agent"}, Args: args, Env: env,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: backupMemory},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: backupMemory},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          standard.RestrictedContainer(),
					}},
				},
			},
		},
	}
}

// BackupSummary is what MatrixOne's tae_sum file of a backup records
// (pkg/backup: backup time, size of the TAE files, backup timestamp,
// type), one CSV line.
type BackupSummary struct {
	// Time is when the backup was taken, "2006-01-02 15:04:05" (UTC).
	Time string
	// Size is the size of the TAE files, in bytes.
	Size int64
	// TS is the backup's consistent point, "<physical>-<logical>".
	TS string
	// Type is "" for a full backup, "incremental" otherwise.
	Type string
}

// BackupSummaryFile is tae_sum's key under a backup's path.
const BackupSummaryFile = "tae/tae_sum"

// ParseBackupSummary reads a tae_sum file as MatrixOne writes it on an
// object store (on a local filesystem MatrixOne adds block checksums,
// which this does not read).
func ParseBackupSummary(data []byte) (BackupSummary, error) {
	line := strings.TrimSpace(string(data))
	fields := strings.Split(line, ",")
	if strings.Contains(line, "\n") || len(fields) != 4 {
		return BackupSummary{}, fmt.Errorf("tae_sum is not one line of 4 fields: %.80q", line)
	}
	size, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || fields[2] == "" {
		return BackupSummary{}, fmt.Errorf("tae_sum has no size or timestamp: %.80q", line)
	}
	return BackupSummary{Time: fields[0], Size: size, TS: fields[2], Type: fields[3]}, nil
}
