// Package wiring checks the places of the repository that are derived from
// one another, so that a system added by the steps of
// docs/design/adding-a-system.md cannot leave one behind: every system with
// an API is known, registered, built into an image, sampled, run by the e2e
// suite, documented and linked from the README, benchmarked with the
// benchmarks' values and covered by the lint's generated rules; every
// default image the API and the samples name is the image its
// images/<name>/build.sh builds; and every kind has its sample in
// config/samples.
package wiring
