package framework

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestStaleRead checks that a cached copy at a resourceVersion this
// controller's own write replaced is stale, that a newer one forgets the
// record, and that only the last few versions are kept.
func TestStaleRead(t *testing.T) {
	r := &core{overwritten: map[types.NamespacedName][]string{}}
	k := types.NamespacedName{Namespace: "ns", Name: "zk"}
	if r.staleRead(k, "1") {
		t.Error("stale without any write")
	}
	r.wrote(k, "1") // finalizer added: 1 -> 2
	r.wrote(k, "2") // status written: 2 -> 3
	for _, v := range []string{"1", "2"} {
		if !r.staleRead(k, v) {
			t.Errorf("a copy at %s, which this controller overwrote, is not stale", v)
		}
	}
	if r.staleRead(k, "3") {
		t.Error("the copy the last write made is stale")
	}
	if r.staleRead(k, "1") {
		t.Error("the record outlived the cache catching up")
	}
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		r.wrote(k, v)
	}
	if r.staleRead(k, "a") || len(r.overwritten[k]) != 0 {
		t.Errorf("kept %v, want the last %d only", r.overwritten[k], maxOverwritten)
	}
}
