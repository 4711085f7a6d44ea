package zkclient

import (
	"crypto/sha1" //nolint:gosec // ZooKeeper's digest scheme is defined as SHA-1
	"encoding/base64"
)

// SuperUser is the user ZooKeeper's DigestAuthenticationProvider treats as
// the super user, which may reconfigure the ensemble.
const SuperUser = "super"

// Option changes how a call connects.
type Option func(*options)

type options struct {
	auth []byte // "user:password" for the digest scheme
}

// WithSuperUser authenticates the session as the super user with password;
// the servers must run with
// -Dzookeeper.DigestAuthenticationProvider.superDigest=SuperDigest(password).
// Reconfiguration needs it unless the servers skip ACLs.
func WithSuperUser(password string) Option {
	return func(o *options) { o.auth = []byte(SuperUser + ":" + password) }
}

// SuperDigest returns the value of the servers'
// zookeeper.DigestAuthenticationProvider.superDigest property for
// password: "super:" and the base64 of SHA-1("super:<password>"), as
// ZooKeeper's DigestAuthenticationProvider.generateDigest computes it.
func SuperDigest(password string) string {
	sum := sha1.Sum([]byte(SuperUser + ":" + password)) //nolint:gosec // see the import
	return SuperUser + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
