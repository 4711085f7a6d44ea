package wire

import (
	"fmt"
	"slices"
	"sort"
)

// MajorityKeptWithout checks that every log shard keeps a majority of its
// members up (HAKeeper hears from their stores, which report running the
// shard's replica) without the log stores named in uuids: the condition
// for replacing a failed store, or taking one down on purpose. A member
// HAKeeper has just added to a store that has not started its replica yet
// is not counted. It returns nil when it holds, and otherwise one reason per shard
// that would lose its majority, in shard order, naming the counts.
//
// Stores HAKeeper no longer hears from already count as lost, so a store
// that failed costs nothing more; what is checked is that the members left
// still elect a leader and keep every acknowledged write. A view that is
// missing (no HAKeeper answered) proves nothing: callers must then hold,
// since the majority is in doubt.
func (v *View) MajorityKeptWithout(uuids ...string) []string {
	var reasons []string
	shards := slices.Clone(v.LogShards)
	sort.Slice(shards, func(i, j int) bool { return shards[i].ShardID < shards[j].ShardID })
	for _, s := range shards {
		members := uint64(len(s.Replicas))
		if s.NumberOfReplicas > members {
			members = s.NumberOfReplicas
		}
		var up, leaving uint64
		for _, store := range s.Replicas {
			switch {
			case slices.Contains(uuids, store):
				leaving++
			case v.RunsReplica(store, s.ShardID):
				up++
			}
		}
		if leaving == 0 {
			continue
		}
		if need := members/2 + 1; up < need {
			reasons = append(reasons, fmt.Sprintf("log shard %d would keep %d of its %d replicas up, and needs %d", s.ShardID, up, members, need))
		}
	}
	return reasons
}
