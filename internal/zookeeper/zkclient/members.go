package zkclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-zookeeper/zk"
)

// configPath is the znode holding the committed dynamic configuration.
const configPath = "/zookeeper/config"

// AnyVersion as fromVersion makes a reconfiguration unconditional.
const AnyVersion int64 = -1

// SessionTimeout is the session timeout the client asks for. Every call
// opens its own short session and closes it before returning.
const SessionTimeout = 4 * time.Second

var (
	// ErrStaleVersion is a reconfiguration whose fromVersion is not the
	// ensemble's configuration version any more: someone reconfigured
	// since the caller read it. Read the members again and recompute.
	ErrStaleVersion = errors.New("the configuration version changed")
	// ErrNoDynamicConfig is the answer of a standalone server, which has no
	// dynamic configuration (its /zookeeper/config is empty). Run servers
	// with standaloneEnabled=false to reconfigure a one-server ensemble.
	ErrNoDynamicConfig = errors.New("the server has no dynamic configuration (standalone)")
	// ErrNoQuorum is ZooKeeper's NEWCONFIGNOQUORUM: the new configuration
	// has no quorum of servers connected to the leader and in sync, for
	// example a joining server that is not running yet. Retry later.
	ErrNoQuorum = errors.New("the new configuration has no quorum of connected servers")
	// ErrReconfigInProgress is ZooKeeper's RECONFIGINPROGRESS: another
	// reconfiguration has not committed yet. Retry later.
	ErrReconfigInProgress = errors.New("another reconfiguration is in progress")
)

// go-zookeeper has no sentinel for these server error codes and reports them
// as fmt.Errorf("unknown error: %v", code).
var zkCodeErrors = map[string]error{
	"unknown error: -13": ErrNoQuorum,
	"unknown error: -14": ErrReconfigInProgress,
}

// Members returns the ensemble's committed dynamic configuration, read from
// /zookeeper/config through any of servers (client addresses, host:port)
// after a sync, so that a follower's answer is as recent as the leader's.
// The call ends with ctx; give ctx a deadline (a hung server in the list can
// hold the call up to it). A standalone server returns ErrNoDynamicConfig.
func Members(ctx context.Context, servers []string, opts ...Option) (Config, error) {
	var cfg Config
	err := withConn(ctx, servers, collect(opts), func(conn *zk.Conn) error {
		var err error
		cfg, err = readConfig(conn)
		return err
	})
	if err != nil {
		return Config{}, fmt.Errorf("reading the members of %v: %w", servers, err)
	}
	return cfg, nil
}

// Reconfigure changes the ensemble's membership with one incremental
// reconfiguration through any of servers: joining servers are added (or,
// when their id is a member already, changed to the given spec), members
// with the ids in leaving are removed. It returns the configuration
// committed afterwards.
//
// fromVersion is an optimistic precondition: the configuration version the
// caller computed the change from (Config.Version), or AnyVersion. When the
// ensemble's configuration has another version, nothing changes and the
// error matches ErrStaleVersion; ZooKeeper checks it again when it commits,
// so a concurrent change is caught too.
//
// The call is idempotent: joining members already present with the same
// spec (see Member.Equal) and leaving ids that are not members are dropped
// from the request; when nothing is left, nothing is written and the current
// configuration is returned without error, whatever fromVersion says (the
// state the caller asks for holds, for example because its previous attempt
// committed and only the answer was lost).
//
// ZooKeeper refuses a change whose new configuration has no quorum of
// servers connected and in sync (ErrNoQuorum: a joining server must run and
// follow the leader first) and a change while another is in progress
// (ErrReconfigInProgress). The servers must run with reconfigEnabled=true,
// and the client needs the super user (WithSuperUser) unless they skip
// ACLs.
func Reconfigure(ctx context.Context, servers []string, joining []Member, leaving []int, fromVersion int64, opts ...Option) (Config, error) {
	if err := checkChange(joining, leaving); err != nil {
		return Config{}, fmt.Errorf("reconfiguring: %w", err)
	}
	log := logr.FromContextOrDiscard(ctx)
	var cfg Config
	err := withConn(ctx, servers, collect(opts), func(conn *zk.Conn) error {
		cur, err := readConfig(conn)
		if err != nil {
			return err
		}
		join, leave := effectiveChange(cur, joining, leaving)
		if len(join) == 0 && len(leave) == 0 {
			cfg = cur
			return nil
		}
		if fromVersion != AnyVersion && fromVersion != cur.Version {
			return fmt.Errorf("%w: it is %#x, the change was computed from %#x", ErrStaleVersion, cur.Version, fromVersion)
		}
		log.V(1).Info("Reconfiguring the ZooKeeper ensemble", "joining", join, "leaving", leave, "fromVersion", fmt.Sprintf("%#x", cur.Version))
		if _, err := conn.IncrementalReconfig(join, leave, fromVersion); err != nil {
			return reconfigError(err, fromVersion)
		}
		cfg, err = readConfig(conn)
		return err
	})
	if err != nil {
		return Config{}, fmt.Errorf("reconfiguring through %v: %w", servers, err)
	}
	return cfg, nil
}

// AddMember adds m to the ensemble, or changes it to m when its id is a
// member already; see Reconfigure.
func AddMember(ctx context.Context, servers []string, m Member, fromVersion int64, opts ...Option) (Config, error) {
	return Reconfigure(ctx, servers, []Member{m}, nil, fromVersion, opts...)
}

// RemoveMember removes server id from the ensemble; removing a server that
// is not a member succeeds without a change. See Reconfigure.
func RemoveMember(ctx context.Context, servers []string, id int, fromVersion int64, opts ...Option) (Config, error) {
	return Reconfigure(ctx, servers, nil, []int{id}, fromVersion, opts...)
}

// checkChange validates a requested change on its own.
func checkChange(joining []Member, leaving []int) error {
	seen := map[int]bool{}
	for _, m := range joining {
		if err := m.Validate(); err != nil {
			return err
		}
		if seen[m.ID] {
			return fmt.Errorf("server %d joins twice", m.ID)
		}
		seen[m.ID] = true
	}
	for _, id := range leaving {
		if seen[id] {
			return fmt.Errorf("server %d both joins and leaves", id)
		}
	}
	return nil
}

// effectiveChange returns what of the change cur does not have yet, in the
// form IncrementalReconfig takes: server.N=spec lines and ids.
func effectiveChange(cur Config, joining []Member, leaving []int) (join, leave []string) {
	for _, m := range joining {
		if have, ok := cur.Members[m.ID]; ok && have.Equal(m) {
			continue
		}
		join = append(join, m.String())
	}
	ids := slices.Clone(leaving)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if _, ok := cur.Members[id]; ok {
			leave = append(leave, strconv.Itoa(id))
		}
	}
	return join, leave
}

// reconfigError maps ZooKeeper's answer to a reconfiguration.
func reconfigError(err error, fromVersion int64) error {
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: ZooKeeper refused version %#x: %w", ErrStaleVersion, fromVersion, err)
	case zkCodeErrors[err.Error()] != nil:
		return fmt.Errorf("%w (%w)", zkCodeErrors[err.Error()], err)
	}
	return err
}

// readConfig syncs with the leader and reads the committed configuration.
func readConfig(conn *zk.Conn) (Config, error) {
	if _, err := conn.Sync(configPath); err != nil {
		return Config{}, fmt.Errorf("sync %s: %w", configPath, err)
	}
	data, _, err := conn.Get(configPath)
	if err != nil {
		return Config{}, fmt.Errorf("get %s: %w", configPath, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", configPath, err)
	}
	if len(cfg.Members) == 0 {
		return Config{}, ErrNoDynamicConfig
	}
	return cfg, nil
}

// withConn opens a session on any of servers, runs fn with it and closes
// it. fn's requests end when ctx does: the client's sockets are closed then,
// which also ends go-zookeeper's goroutines, so none outlives the call for
// long. go-zookeeper's own log lines go to ctx's logger at V(4).
func withConn(ctx context.Context, servers []string, o options, fn func(*zk.Conn) error) error {
	if len(servers) == 0 {
		return errors.New("no servers")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { _ = c.Close() })
		return c, nil
	}
	conn, _, err := zk.Connect(servers, SessionTimeout,
		zk.WithDialer(dialer),
		zk.WithLogger(zkLogger{logr.FromContextOrDiscard(ctx).V(4)}),
		zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		// Authenticating waits for the session, so it runs under ctx too.
		if o.auth != nil {
			if err := conn.AddAuth("digest", o.auth); err != nil {
				done <- fmt.Errorf("authenticating: %w", err)
				return
			}
		}
		done <- fn(conn)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Closing the sockets fails fn's pending request; a fn that
		// finished meanwhile keeps its result.
		cancel()
		if err = <-done; err != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	conn.Close()
	return err
}

// zkLogger sends go-zookeeper's log lines to a logr logger.
type zkLogger struct{ log logr.Logger }

// Printf implements zk.Logger.
func (l zkLogger) Printf(format string, args ...any) {
	l.log.Info("ZooKeeper client", "message", fmt.Sprintf(format, args...))
}
