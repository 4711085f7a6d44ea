package backup

import "testing"

func TestStatement(t *testing.T) {
	base := S3{Endpoint: "http://s3.steward-s3.svc:7070", Region: "us-east-1", Bucket: "backups", Path: "ns/daily-1a2b3c4d"}
	keyed := base
	keyed.AccessKeyID, keyed.SecretAccessKey, keyed.PathStyle = "AK'1", `s\e'cret`, true
	for _, tc := range []struct {
		name string
		in   S3
		want string
	}{
		{"no keys, virtual-host", base,
			"BACKUP '' S3OPTION {'endpoint'='http://s3.steward-s3.svc:7070', 'region'='us-east-1', 'bucket'='backups', 'filepath'='ns/daily-1a2b3c4d'}"},
		{"keys escaped, path style", keyed,
			`BACKUP '' S3OPTION {'endpoint'='http://s3.steward-s3.svc:7070', 'region'='us-east-1', 'bucket'='backups', 'filepath'='ns/daily-1a2b3c4d', 'access_key_id'='AK\'1', 'secret_access_key'='s\\e\'cret', 'is_minio'='true'}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Statement(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Statement() = %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
	for _, missing := range []func(*S3){
		func(s *S3) { s.Endpoint = "" }, func(s *S3) { s.Region = "" }, func(s *S3) { s.Bucket = "" }, func(s *S3) { s.Path = "" },
	} {
		s := base
		missing(&s)
		if _, err := Statement(s); err == nil {
			t.Errorf("Statement(%+v) took a location with a part missing", s)
		}
	}
}
