// Package zkcheck is the output of the e2e suite's ZooKeeper checker
// (test/e2e/smoke's zkcheck): the numbers of the znodes it found, one per
// line in increasing order, then "END <count>". The e2e suite reads it
// from a pod's log or from kubectl exec; the count tells a whole output
// from one cut short (a short-lived pod's log has lost its end).
package zkcheck
