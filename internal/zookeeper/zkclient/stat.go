package zkclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Role is a server's state as the stat command reports it
// (server_stats.server_state). Values other than the constants below are
// kept as ZooKeeper spelled them.
type Role string

// The roles a ZooKeeper 3.8 server reports.
const (
	// RoleLeader is the ensemble's leader.
	RoleLeader Role = "leader"
	// RoleFollower is a voting member following the leader, or a server
	// that has joined the leader but is not a member yet (before the
	// reconfiguration that adds it).
	RoleFollower Role = "follower"
	// RoleObserver is a non-voting member.
	RoleObserver Role = "observer"
	// RoleStandalone is a server running alone, without a quorum
	// (standaloneEnabled=true and one server).
	RoleStandalone Role = "standalone"
	// RoleReadOnly is a server partitioned from its quorum that serves
	// reads only (readonlymode.enabled).
	RoleReadOnly Role = "read-only"
)

// Zxid is a ZooKeeper transaction id: the leader epoch in the high 32 bits
// and a counter within the epoch in the low 32 bits.
type Zxid int64

// Epoch returns the leader epoch that issued the transaction.
func (z Zxid) Epoch() uint32 { return uint32(uint64(z) >> 32) }

// Counter returns the transaction's number within its epoch.
func (z Zxid) Counter() uint32 { return uint32(uint64(z)) }

// String returns the zxid in hexadecimal, as ZooKeeper logs it.
func (z Zxid) String() string { return fmt.Sprintf("0x%x", int64(z)) }

// ServerStat is what one server's AdminServer answers to the stat command.
type ServerStat struct {
	// Role is server_stats.server_state.
	Role Role
	// Version is ZooKeeper's version string, for example
	// "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC" (sic, Debian's build).
	Version string
	// ReadOnly reports whether the server is in read-only mode.
	ReadOnly bool
	// LastZxid is the last transaction the server applied
	// (server_stats.last_processed_zxid). Right after an election the
	// leader reports its new epoch's first zxid and followers 0 until they
	// apply a transaction.
	LastZxid Zxid
	// Connections is the number of live client connections
	// (server_stats.num_alive_client_connections).
	Connections int
	// OutstandingRequests is the number of queued client requests.
	OutstandingRequests int64
	// NodeCount is the number of znodes.
	NodeCount int64
	// Uptime is how long the server has served in its current role; it
	// starts again at every election.
	Uptime time.Duration
}

// ErrNotServing is the answer of a server that runs but does not serve
// requests: it is looking for a leader, has no quorum, or is still syncing.
// ZooKeeper 3.8 answers HTTP 200 with {"error": "This ZooKeeper instance is
// not currently serving requests"} and nothing else. Test it with
// errors.Is; the error is a [*CommandError].
var ErrNotServing = errors.New("not currently serving requests")

// notServingMessage is how ZooKeeper says it (ZooKeeperServer's
// "This ZooKeeper instance is not currently serving requests").
const notServingMessage = "not currently serving requests"

// CommandError is an AdminServer command that answered with its "error"
// field set. In ZooKeeper 3.8 that answer still comes with HTTP 200.
type CommandError struct {
	// Command is the command that failed, as the answer names it.
	Command string
	// Message is the answer's "error".
	Message string
}

// Error implements error.
func (e *CommandError) Error() string {
	return fmt.Sprintf("AdminServer command %q: %s", e.Command, e.Message)
}

// Is reports whether e is the not-serving answer, so that
// errors.Is(err, ErrNotServing) works.
func (e *CommandError) Is(target error) bool {
	return target == ErrNotServing && strings.Contains(e.Message, notServingMessage)
}

// StatusError is an AdminServer answer with an HTTP status other than 200
// and no JSON error of its own, for example 404 for an unknown command.
type StatusError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Body is the start of the answer.
	Body string
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("AdminServer answered HTTP %d: %s", e.StatusCode, e.Body)
}

// maxAnswer bounds what is read of an answer: the stat command lists every
// client connection.
const maxAnswer = 8 << 20

// Stat asks the AdminServer at addr (host:port, for example
// "10.0.0.7:8080") for the stat command: GET http://addr/commands/stat.
// The call ends with ctx; give ctx a deadline. A nil client means
// http.DefaultClient. A server that runs but does not serve returns an
// error for which errors.Is(err, ErrNotServing) holds.
func Stat(ctx context.Context, client *http.Client, addr string) (ServerStat, error) {
	if client == nil {
		client = http.DefaultClient
	}
	url := "http://" + addr + "/commands/stat"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return ServerStat{}, fmt.Errorf("stat %s: %w", addr, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return ServerStat{}, fmt.Errorf("stat %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return ServerStat{}, fmt.Errorf("stat %s: reading the answer: %w", addr, err)
	}
	st, err := parseStat(body, resp.StatusCode)
	if err != nil {
		return ServerStat{}, fmt.Errorf("stat %s: %w", addr, err)
	}
	return st, nil
}

// ParseStat parses the JSON answer of the AdminServer's stat command.
// An answer with "error" set returns a [*CommandError] (see ErrNotServing).
func ParseStat(data []byte) (ServerStat, error) {
	return parseStat(data, http.StatusOK)
}

// statAnswer is the part of the stat command's JSON that is read.
type statAnswer struct {
	Command     string  `json:"command"`
	Error       *string `json:"error"`
	Version     string  `json:"version"`
	ReadOnly    bool    `json:"read_only"`
	NodeCount   int64   `json:"node_count"`
	ServerStats *struct {
		ServerState         string `json:"server_state"`
		LastProcessedZxid   int64  `json:"last_processed_zxid"`
		NumAliveConnections int    `json:"num_alive_client_connections"`
		OutstandingRequests int64  `json:"outstanding_requests"`
		Uptime              int64  `json:"uptime"` // milliseconds
	} `json:"server_stats"`
}

func parseStat(data []byte, status int) (ServerStat, error) {
	var a statAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		if status != http.StatusOK {
			return ServerStat{}, &StatusError{StatusCode: status, Body: snippet(data)}
		}
		return ServerStat{}, fmt.Errorf("parsing the stat answer: %w", err)
	}
	switch {
	case a.Error != nil:
		return ServerStat{}, &CommandError{Command: a.Command, Message: *a.Error}
	case status != http.StatusOK:
		return ServerStat{}, &StatusError{StatusCode: status, Body: snippet(data)}
	case a.ServerStats == nil:
		return ServerStat{}, errors.New("the stat answer has no server_stats")
	case a.ServerStats.ServerState == "":
		return ServerStat{}, errors.New("the stat answer has no server_stats.server_state")
	}
	s := a.ServerStats
	return ServerStat{
		Role:                Role(s.ServerState),
		Version:             a.Version,
		ReadOnly:            a.ReadOnly,
		LastZxid:            Zxid(s.LastProcessedZxid),
		Connections:         s.NumAliveConnections,
		OutstandingRequests: s.OutstandingRequests,
		NodeCount:           a.NodeCount,
		Uptime:              time.Duration(s.Uptime) * time.Millisecond,
	}, nil
}

// snippet returns the start of an answer for an error message.
func snippet(data []byte) string {
	const n = 200
	s := strings.TrimSpace(string(data))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
