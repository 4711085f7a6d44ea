// Package matrixone holds Steward's MatrixOne controllers: so far the
// LogSet's (the log service: HAKeeper and the log shards), which the
// TNSet's, CNSet's, ProxySet's and the MatrixOneCluster umbrella's will
// join. Each set is a framework actor; the sets depend on each other only
// through status. They run the image images/matrixone, observe HAKeeper
// through mo-agent's probe in the log pods (package hakeeper) and build
// their children with package build. docs/matrixone.md has the design.
package matrixone
