// Package version reports the version of the Steward build.
//
// The Makefile stamps [Version] at link time:
//
//	go build -ldflags "-X github.com/stewardhq/steward/internal/version.Version=v0.1.0" ./cmd/steward
package version
