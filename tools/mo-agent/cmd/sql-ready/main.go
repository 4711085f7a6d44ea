// Command sql-ready is the readiness probe of Steward's MatrixOne CN and
// proxy pods, run by the kubelet in the mo container (an exec probe): it
// exits 0 when the pod's SQL port completes a MySQL handshake and answers
// select 1 within --timeout, or completes the handshake and refuses the
// login (MySQL error 1045, which MatrixOne sends only after reading its
// catalog; package sqlready), and 1 with the reason otherwise.
//
//	sql-ready [--addr HOST:PORT] [--user USER] [--password-file FILE] [--timeout D]
//
// It is its own small binary, not a mo-agent subcommand: mo-agent links
// MatrixOne's client, whose package initialisation alone takes about 50
// MiB and 25 ms on every start, in the container's memory limit (a
// proxy's is 192 MiB) every few seconds; this takes about 5 MiB.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/stewardhq/steward/tools/mo-agent/sqlready"
)

func main() {
	fs := flag.NewFlagSet("sql-ready", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6001", "the SQL port")
	user := fs.String("user", "root", "the user to log in as")
	passwordFile := fs.String("password-file", "", "a file holding the user's password (a Secret's key); missing: no password")
	timeout := fs.Duration("timeout", 2*time.Second, "deadline of the handshake and the statement together; under the probe's timeoutSeconds")
	_ = fs.Parse(os.Args[1:])
	var password string
	if *passwordFile != "" {
		data, err := os.ReadFile(*passwordFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fail(err)
		}
		// The exact bytes: the CN took root's password from the same
		// key (DEFAULT_PASSWORD), a trailing newline and all.
		password = string(data)
	}
	r, err := sqlready.Check(context.Background(), *addr, *user, password, *timeout)
	if err != nil {
		fail(err)
	}
	fmt.Println(r)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "not ready:", err)
	os.Exit(1)
}
