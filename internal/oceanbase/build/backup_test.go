package build_test

import (
	"testing"
	"time"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

func TestDestination(t *testing.T) {
	s3 := obv1.BackupDestination{Path: "s3://backups/t1/data",
		S3: &obv1.BackupS3{Endpoint: "versitygw.storage.svc:7070", Region: "us-east-1", CredentialsSecret: "s3"}}
	file := obv1.BackupDestination{Path: "file:///ob-backup/t1/data"}
	keys := build.S3Keys{ID: "AKID", Secret: "s/cr+t"}
	for _, tc := range []struct {
		name string
		dest obv1.BackupDestination
		want string
	}{
		{"a directory", file, "file:///ob-backup/t1/data"},
		{"a bucket, keys as given", s3, "s3://backups/t1/data?host=versitygw.storage.svc:7070&access_id=AKID&access_key=s/cr+t&s3_region=us-east-1"},
		{"a bucket addressed in the path", func() obv1.BackupDestination {
			d := *s3.DeepCopy()
			d.S3.PathStyle = true
			return d
		}(), "s3://backups/t1/data?host=versitygw.storage.svc:7070&access_id=AKID&access_key=s/cr+t&s3_region=us-east-1&addressing_model=path_style"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := build.Destination(tc.dest, keys); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSameDestination(t *testing.T) {
	s3 := obv1.BackupDestination{Path: "s3://backups/t1/data",
		S3: &obv1.BackupS3{Endpoint: "gw:7070", Region: "us-east-1", CredentialsSecret: "s3"}}
	for _, tc := range []struct {
		name string
		have string
		want obv1.BackupDestination
		same bool
	}{
		{"none set", "", s3, false},
		{"the same directory", "file:///b/t1/", obv1.BackupDestination{Path: "file:///b/t1"}, true},
		{"another directory", "file:///b/t2", obv1.BackupDestination{Path: "file:///b/t1"}, false},
		{"the same bucket, keys not shown", "s3://backups/t1/data?host=gw:7070&access_id=AKID&s3_region=us-east-1", s3, true},
		{"another host", "s3://backups/t1/data?host=other:7070&access_id=AKID&s3_region=us-east-1", s3, false},
		{"another region", "s3://backups/t1/data?host=gw:7070&access_id=AKID&s3_region=eu-west-1", s3, false},
		{"another prefix", "s3://backups/t2/data?host=gw:7070&s3_region=us-east-1", s3, false},
		{"path-style where the spec is not", "s3://backups/t1/data?host=gw:7070&s3_region=us-east-1&addressing_model=path_style", s3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := build.SameDestination(tc.have, tc.want); got != tc.same {
				t.Errorf("SameDestination(%q) = %v", tc.have, got)
			}
		})
	}
}

func TestScheduledBackup(t *testing.T) {
	p := &obv1.OBTenantBackupPolicy{}
	p.Name, p.Namespace, p.Spec.Tenant = "t1-backups", "db", "t1"
	due := time.Unix(1800000000, 0)
	for typ, name := range map[string]string{obv1.BackupFull: "t1-backups-full-1800000000", obv1.BackupIncremental: "t1-backups-inc-1800000000"} {
		b := build.ScheduledBackup(p, typ, due)
		if b.Name != name || b.Namespace != "db" || b.Spec.Tenant != "t1" || b.Spec.Type != typ || b.Labels[build.LabelBackupPolicy] != "t1-backups" {
			t.Errorf("%s: %+v", typ, b)
		}
	}
}
