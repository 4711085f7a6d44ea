package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/stewardhq/steward/tools/mo-agent/backup"
)

// Environment of mo-agent backup: secrets never travel as flags, which
// the pod's spec shows to whoever may read it.
const (
	envPassword  = "MO_PASSWORD"
	envAccessKey = "AWS_ACCESS_KEY_ID"
	envSecretKey = "AWS_SECRET_ACCESS_KEY"
)

// terminationLog is where the kubelet reads a container's termination
// message; the operator shows it in the BackupJob's status.
const terminationLog = "/dev/termination-log"

// runBackup runs one full backup through the CN at --addr and exits
// non-zero when MatrixOne refused it or did not finish within --timeout.
func runBackup(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ExitOnError)
	addr := fs.String("addr", "", "a CN's or the proxies' SQL address, host:port")
	user := fs.String("user", "root", "the sys account's administrator; the password is read from "+envPassword)
	var s backup.S3
	fs.StringVar(&s.Endpoint, "endpoint", "", "the store's URL, scheme included")
	fs.StringVar(&s.Region, "region", "", "the bucket's region")
	fs.StringVar(&s.Bucket, "bucket", "", "the bucket")
	fs.StringVar(&s.Path, "path", "", "the key prefix the backup is written under")
	fs.BoolVar(&s.PathStyle, "path-style", false, "address the bucket in the URL's path (MatrixOne's is_minio)")
	timeout := fs.Duration("timeout", 6*time.Hour, "how long the statement may run")
	_ = fs.Parse(args)
	if *addr == "" {
		return fmt.Errorf("--addr is required")
	}
	s.AccessKeyID, s.SecretAccessKey = os.Getenv(envAccessKey), os.Getenv(envSecretKey)
	stmt, err := backup.Statement(s)
	if err != nil {
		return err
	}
	slog.Info("Backing up", "addr", *addr, "endpoint", s.Endpoint, "bucket", s.Bucket, "path", s.Path)
	took, err := backup.Run(context.Background(), backup.Target{Addr: *addr, User: *user, Password: os.Getenv(envPassword)}, stmt, *timeout)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("backup written to %s/%s in %s", s.Bucket, s.Path, took.Round(time.Millisecond))
	slog.Info("Backed up", "bucket", s.Bucket, "path", s.Path, "took", took)
	// The message is a courtesy; the pod's exit code is the result.
	_ = os.WriteFile(terminationLog, []byte(msg), 0o644)
	return nil
}
