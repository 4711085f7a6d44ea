// Package pki makes the cluster's certificate authority, the certificates
// signed by it, the service-account signing key and the static tokens the
// components authenticate with.
package pki
