package oceanbase

import (
	"testing"
	"time"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// TestCoarseCheckpoint: status shows OceanBase's archive checkpoint again
// only once it moved checkpointRefresh past the one shown, or the round or
// its status changed; never a checkpoint ahead of OceanBase's.
func TestCoarseCheckpoint(t *testing.T) {
	at := func(d time.Duration) int64 { return time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC).Add(d).UnixNano() }
	shown := &obv1.ArchiveStatus{RoundID: 2, Status: obv1.ArchiveDoing, CheckpointSCN: at(0)}
	for _, tc := range []struct {
		name string
		prev *obv1.ArchiveStatus
		now  obsql.ArchiveRound
		want int64
	}{
		{"none shown", nil, obsql.ArchiveRound{RoundID: 2, Status: obv1.ArchiveDoing, CheckpointSCN: at(time.Second)}, at(time.Second)},
		{"a minute on", shown, obsql.ArchiveRound{RoundID: 2, Status: obv1.ArchiveDoing, CheckpointSCN: at(time.Minute)}, at(0)},
		{"the refresh interval on", shown, obsql.ArchiveRound{RoundID: 2, Status: obv1.ArchiveDoing, CheckpointSCN: at(checkpointRefresh)}, at(checkpointRefresh)},
		{"another round", shown, obsql.ArchiveRound{RoundID: 3, Status: obv1.ArchiveDoing, CheckpointSCN: at(time.Second)}, at(time.Second)},
		{"suspended", shown, obsql.ArchiveRound{RoundID: 2, Status: obv1.ArchiveSuspend, CheckpointSCN: at(time.Second)}, at(time.Second)},
		{"behind the one shown", shown, obsql.ArchiveRound{RoundID: 2, Status: obv1.ArchiveDoing, CheckpointSCN: at(-time.Second)}, at(-time.Second)},
	} {
		if got := coarseCheckpoint(tc.prev, &tc.now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
