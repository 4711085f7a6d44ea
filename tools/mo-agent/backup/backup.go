// Package backup runs MatrixOne's own physical backup statement,
// BACKUP ” S3OPTION {...}, against a CN: the work of a Steward BackupJob's
// pod (mo-agent backup). The statement copies the cluster's TAE data,
// checkpoints, HAKeeper's ID allocators and the roles' configurations to
// the location (MatrixOne 1.2.4, pkg/backup); it returns once the backup
// is complete, so the pod's exit says whether it is.
//
// It runs in a pod of its own, not in the operator, because it takes as
// long as the data takes to copy and must outlive an operator restart.
package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// S3 is where the backup goes and how MatrixOne reaches it: the keys of
// the statement's S3OPTION (pkg/backup/utils.go, getS3Config).
type S3 struct {
	// Endpoint is the store's URL, scheme included.
	Endpoint string
	// Region, Bucket and Path (the key prefix the backup is written under).
	Region, Bucket, Path string
	// AccessKeyID and SecretAccessKey are the store's credentials; empty
	// leaves them to the AWS SDK's chain (the pod's identity).
	AccessKeyID, SecretAccessKey string
	// PathStyle addresses the bucket in the URL's path: MatrixOne's
	// is_minio.
	PathStyle bool
}

// Statement returns the BACKUP statement that writes a full backup to s.
// MatrixOne ignores the leading string; an empty TIMESTAMP and TYPE make
// it a full backup, the only kind a restore can start from alone.
func Statement(s S3) (string, error) {
	if s.Endpoint == "" || s.Region == "" || s.Bucket == "" || s.Path == "" {
		return "", errors.New("endpoint, region, bucket and path are required")
	}
	opts := [][2]string{{"endpoint", s.Endpoint}, {"region", s.Region}, {"bucket", s.Bucket}, {"filepath", s.Path}}
	if s.AccessKeyID != "" || s.SecretAccessKey != "" {
		opts = append(opts, [2]string{"access_key_id", s.AccessKeyID}, [2]string{"secret_access_key", s.SecretAccessKey})
	}
	if s.PathStyle {
		opts = append(opts, [2]string{"is_minio", "true"})
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = quote(o[0]) + "=" + quote(o[1])
	}
	return "BACKUP '' S3OPTION {" + strings.Join(parts, ", ") + "}", nil
}

// quote makes s a MySQL string literal as MatrixOne's parser reads one:
// backslash, single quote, newline, carriage return and NUL escaped.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "\x00", `\0`)
	return "'" + r.Replace(s) + "'"
}

// Target is the CN (or proxy) the statement is sent to, as root of the
// sys account.
type Target struct {
	Addr, User, Password string
}

// Run connects to t and runs stmt, waiting for it for at most timeout. It
// returns how long the statement ran.
func Run(ctx context.Context, t Target, stmt string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", t.Addr, t.User, t.Password
	cfg.Timeout = 30 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return 0, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	start := time.Now()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return time.Since(start), fmt.Errorf("BACKUP through %s: %w", t.Addr, err)
	}
	return time.Since(start), nil
}
