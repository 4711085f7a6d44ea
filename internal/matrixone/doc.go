// Package matrixone holds Steward's MatrixOne controllers: the LogSet's
// (the log service: HAKeeper and the log shards), the TNSet's, CNSet's and
// ProxySet's, and the MatrixOneCluster umbrella's, which makes a LogSet, a
// TNSet, its CNSets and a ProxySet and orders a rollout across them. Each
// is a framework actor; the sets depend on each other only through status.
// They run the image images/matrixone, observe HAKeeper through mo-agent's
// probe in the log pods (package hakeeper) and build their children with
// package build. docs/matrixone.md has the design.
package matrixone
