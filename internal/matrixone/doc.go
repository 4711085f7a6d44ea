// Package matrixone will hold Steward's MatrixOne controllers (LogSet, TNSet,
// CNSet, ProxySet and the MatrixOneCluster umbrella). What is here so far is
// what they stand on: the reader of HAKeeper's view (package hakeeper). The
// image they run is images/matrixone; docs/matrixone.md has the design.
package matrixone
