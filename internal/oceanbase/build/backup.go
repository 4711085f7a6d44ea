package build

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
)

// BackupPolicyApp is the app.kubernetes.io/name the backup policy
// controller registers with; BackupApp the backup controller's.
const (
	BackupPolicyApp = "obtenantbackuppolicy"
	BackupApp       = "obtenantbackup"
)

// LabelBackupPolicy labels the OBTenantBackups a policy's schedules take
// with the policy's name.
const LabelBackupPolicy = "oceanbase.steward.dev/backup-policy"

// Keys of an S3 destination's credentials Secret (BackupS3).
const (
	S3AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	S3SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// S3Keys are an S3 destination's access key id and secret key.
type S3Keys struct{ ID, Secret string }

// Destination renders a destination as OceanBase takes it: the path, and
// for s3:// the query OceanBase 4.x reads (host, access_id, access_key,
// s3_region, and addressing_model for path-style), whose values it takes as written, unescaped (ValidS3Keys
// refuses keys that would break it).
func Destination(d obv1.BackupDestination, keys S3Keys) string {
	if d.S3 == nil {
		return d.Path
	}
	dest := d.Path + "?host=" + d.S3.Endpoint + "&access_id=" + keys.ID + "&access_key=" + keys.Secret + "&s3_region=" + d.S3.Region
	if d.S3.PathStyle {
		dest += "&addressing_model=path_style"
	}
	return dest
}

// ValidS3Keys reports whether keys can be written into a destination's
// query: non-empty, with no '&', '?' or white space.
func ValidS3Keys(keys S3Keys) bool {
	ok := func(s string) bool { return s != "" && !strings.ContainsAny(s, "&? \t\n") }
	return ok(keys.ID) && ok(keys.Secret)
}

// SameDestination reports whether OceanBase's destination (as its views
// show it) is the spec's: the same path, and for s3:// the same host,
// region and addressing (its views do not show the keys, so a changed key
// is not seen).
func SameDestination(have string, want obv1.BackupDestination) bool {
	path, query, _ := strings.Cut(have, "?")
	if strings.TrimSuffix(path, "/") != strings.TrimSuffix(want.Path, "/") {
		return false
	}
	if want.S3 == nil {
		return true
	}
	q, err := url.ParseQuery(query)
	return err == nil && q.Get("host") == want.S3.Endpoint && q.Get("s3_region") == want.S3.Region &&
		(q.Get("addressing_model") == "path_style") == want.S3.PathStyle
}

// ScheduledBackup is the OBTenantBackup of a policy's run of typ due at
// due: named after the policy, the type and the due time (Unix seconds),
// so a run is created once.
func ScheduledBackup(p *obv1.OBTenantBackupPolicy, typ string, due time.Time) *obv1.OBTenantBackup {
	kind := "full"
	if typ == obv1.BackupIncremental {
		kind = "inc"
	}
	return &obv1.OBTenantBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name + "-" + kind + "-" + strconv.FormatInt(due.Unix(), 10),
			Labels: map[string]string{LabelBackupPolicy: p.Name}},
		Spec: obv1.OBTenantBackupSpec{Tenant: p.Spec.Tenant, Type: typ, PlusArchivelog: p.Spec.DataBackup.PlusArchivelog,
			EncryptionSecret: p.Spec.DataBackup.EncryptionSecret},
	}
}
