package zkclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// VotingView asks the AdminServer at addr for the voting_view command and
// returns the ids of the voting members (participants) in the server's
// current configuration, in increasing order. The leader's view is the
// committed membership; a follower's may lag a reconfiguration by a moment.
// Unlike Members it opens no ZooKeeper session, so it costs the ensemble
// no transaction: the controller calls it on every pass.
func VotingView(ctx context.Context, client *http.Client, addr string) ([]int, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/commands/voting_view", http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("voting_view %s: %w", addr, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("voting_view %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("voting_view %s: reading the answer: %w", addr, err)
	}
	ids, err := ParseVotingView(body)
	if err != nil {
		return nil, fmt.Errorf("voting_view %s: %w", addr, err)
	}
	return ids, nil
}

// ParseVotingView parses the JSON answer of the voting_view command: the
// ids of current_config whose learner_type is participant, sorted.
func ParseVotingView(data []byte) ([]int, error) {
	var a struct {
		Command       string  `json:"command"`
		Error         *string `json:"error"`
		CurrentConfig map[string]struct {
			LearnerType string `json:"learner_type"`
		} `json:"current_config"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("parsing the voting_view answer: %w", err)
	}
	if a.Error != nil {
		return nil, &CommandError{Command: a.Command, Message: *a.Error}
	}
	if len(a.CurrentConfig) == 0 {
		return nil, fmt.Errorf("the voting_view answer has no current_config")
	}
	ids := make([]int, 0, len(a.CurrentConfig))
	for key, m := range a.CurrentConfig {
		id, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("voting_view: server id %q is not a number", key)
		}
		if LearnerType(m.LearnerType) == Participant {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
