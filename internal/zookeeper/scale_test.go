package zookeeper

import (
	"testing"

	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// TestMemberChangeMadeBy checks when a change whose answer was lost is
// found made in the configuration read afterwards, so that it is reported
// once and only then.
func TestMemberChangeMadeBy(t *testing.T) {
	cfg := func(version int64, ids ...int) zkclient.Config {
		c := zkclient.Config{Version: version, Members: map[int]zkclient.Member{}}
		for _, id := range ids {
			c.Members[id] = zkclient.Member{ID: id}
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		change memberChange
		after  zkclient.Config
		want   bool
	}{
		{"removal made", memberChange{remove: 3, from: 0x100}, cfg(0x200, 1, 2), true},
		{"removal not made", memberChange{remove: 3, from: 0x100}, cfg(0x100, 1, 2, 3), false},
		{"another change made instead", memberChange{remove: 3, from: 0x100}, cfg(0x200, 1, 2, 3, 4), false},
		{"addition made", memberChange{add: 4, from: 0x100}, cfg(0x200, 1, 2, 3, 4), true},
		{"addition not made", memberChange{add: 4, from: 0x100}, cfg(0x100, 1, 2, 3), false},
		{"same version, server there all along", memberChange{add: 4, from: 0x100}, cfg(0x100, 1, 2, 3, 4), false},
	} {
		if got := tc.change.madeBy(tc.after); got != tc.want {
			t.Errorf("%s: madeBy = %t, want %t", tc.name, got, tc.want)
		}
	}
	if reason, msg := (memberChange{remove: 3}).event(); reason != "MemberRemoved" || msg != "Server 3 left the ensemble" {
		t.Errorf("removal event = %s %q", reason, msg)
	}
	if reason, msg := (memberChange{add: 2}).event(); reason != "MemberAdded" || msg != "Server 2 joined the ensemble" {
		t.Errorf("addition event = %s %q", reason, msg)
	}
}
