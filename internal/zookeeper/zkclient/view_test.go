package zkclient_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// TestParseVotingView parses voting_view answers: voting-view-three.json
// was captured from a real ZooKeeper 3.8.0 ensemble (zktest), the others
// are written in the same shape.
func TestParseVotingView(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		want    []int
		wantErr string
		wantCmd *zkclient.CommandError
	}{{
		name: "three participants",
		file: "voting-view-three.json",
		want: []int{1, 2, 3},
	}, {
		name: "observer excluded, ids sorted as numbers",
		file: "voting-view-observer.json",
		want: []int{1, 2, 10},
	}, {
		name:    "command error",
		file:    "voting-view-not-serving.json",
		wantErr: "not currently serving requests",
		wantCmd: &zkclient.CommandError{Command: "voting_view", Message: "This ZooKeeper instance is not currently serving requests"},
	}, {
		name:    "malformed JSON",
		file:    "voting-view-malformed.json",
		wantErr: "parsing the voting_view answer",
	}, {
		name:    "empty current_config",
		file:    "voting-view-empty.json",
		wantErr: "no current_config",
	}, {
		name:    "non-numeric id",
		file:    "voting-view-bad-id.json",
		wantErr: `server id "server.2" is not a number`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := zkclient.ParseVotingView(fixture(t, tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseVotingView() = %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				var cmdErr *zkclient.CommandError
				if isCmd := errors.As(err, &cmdErr); isCmd != (tc.wantCmd != nil) {
					t.Fatalf("ParseVotingView() error = %#v, want a *CommandError: %t", err, tc.wantCmd != nil)
				}
				if tc.wantCmd != nil && *cmdErr != *tc.wantCmd {
					t.Errorf("ParseVotingView() error = %+v, want %+v", cmdErr, tc.wantCmd)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVotingView(): %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ParseVotingView() = %v, want %v", got, tc.want)
			}
		})
	}
}
