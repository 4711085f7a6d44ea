package zkclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// LearnerType is how a member takes part in the ensemble.
type LearnerType string

// The learner types of a dynamic configuration line.
const (
	// Participant members vote (and may lead).
	Participant LearnerType = "participant"
	// Observer members follow the leader without voting.
	Observer LearnerType = "observer"
)

// Member is one server of an ensemble, one line of the dynamic
// configuration:
//
//	server.<ID>=<Address>:<QuorumPort>:<ElectionPort>[:<Type>][;[<ClientAddress>:]<ClientPort>]
//
// IPv6 addresses are written in brackets in the line and without them here.
type Member struct {
	// ID is the server id (its myid).
	ID int
	// Address is the host the quorum and election ports listen on.
	Address string
	// QuorumPort is where followers connect to the leader (2888 by
	// convention).
	QuorumPort int
	// ElectionPort is the leader election port (3888 by convention).
	ElectionPort int
	// Type is Participant or Observer; empty means Participant.
	Type LearnerType
	// ClientAddress is the host the client port listens on; empty means
	// every address, which ZooKeeper writes 0.0.0.0.
	ClientAddress string
	// ClientPort is the client port; 0 when the line has none.
	ClientPort int
}

// Spec returns the right-hand side of the member's configuration line, as
// ZooKeeper writes it.
func (m Member) Spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d:%s", bracket(m.Address), m.QuorumPort, m.ElectionPort, m.learnerType())
	if m.ClientPort != 0 {
		fmt.Fprintf(&b, ";%s:%d", bracket(m.clientAddress()), m.ClientPort)
	}
	return b.String()
}

// String returns the member's configuration line, server.<ID>=<Spec>.
func (m Member) String() string {
	return fmt.Sprintf("server.%d=%s", m.ID, m.Spec())
}

// Equal reports whether m and o describe the same server the same way,
// with the defaults ZooKeeper fills in (participant; client address
// 0.0.0.0) applied to both.
func (m Member) Equal(o Member) bool {
	return m.ID == o.ID && m.Address == o.Address && m.QuorumPort == o.QuorumPort &&
		m.ElectionPort == o.ElectionPort && m.learnerType() == o.learnerType() &&
		m.ClientPort == o.ClientPort && (m.ClientPort == 0 || m.clientAddress() == o.clientAddress())
}

// Validate checks that the member can be written as a configuration line.
func (m Member) Validate() error {
	var errs []error
	if m.ID < 0 {
		errs = append(errs, fmt.Errorf("id %d is negative", m.ID))
	}
	if m.Address == "" {
		errs = append(errs, errors.New("no address"))
	}
	if strings.ContainsAny(m.Address+m.ClientAddress, ";|,= \t\n[]") {
		errs = append(errs, fmt.Errorf("address %q or client address %q has a reserved character", m.Address, m.ClientAddress))
	}
	for _, p := range []struct {
		name string
		port int
		zero bool
	}{{"quorum", m.QuorumPort, false}, {"election", m.ElectionPort, false}, {"client", m.ClientPort, true}} {
		if (p.port != 0 || !p.zero) && (p.port < 1 || p.port > 65535) {
			errs = append(errs, fmt.Errorf("%s port %d is not in 1-65535", p.name, p.port))
		}
	}
	if t := m.learnerType(); t != Participant && t != Observer {
		errs = append(errs, fmt.Errorf("type %q is neither %s nor %s", m.Type, Participant, Observer))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("member %d: %w", m.ID, err)
	}
	return nil
}

func (m Member) learnerType() LearnerType {
	if m.Type == "" {
		return Participant
	}
	return m.Type
}

func (m Member) clientAddress() string {
	if m.ClientAddress == "" {
		return "0.0.0.0"
	}
	return m.ClientAddress
}

func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// Config is an ensemble's dynamic configuration: the content of the
// /zookeeper/config znode, or of a zoo.cfg.dynamic file.
type Config struct {
	// Members are the servers, by id.
	Members map[int]Member
	// Version is the configuration's version: the zxid of the transaction
	// that committed it (the znode's "version=" line, hexadecimal there).
	// It is the fromVersion of the next reconfiguration. Zero when the
	// text has no version line (a zoo.cfg.dynamic file).
	Version int64
}

// IDs returns the member ids in increasing order.
func (c Config) IDs() []int {
	ids := make([]int, 0, len(c.Members))
	for id := range c.Members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// String returns the configuration as ZooKeeper writes the znode: one
// server line per member in id order, then the version line (omitted when
// Version is zero, as in a zoo.cfg.dynamic file).
func (c Config) String() string {
	var b strings.Builder
	for _, id := range c.IDs() {
		b.WriteString(c.Members[id].String())
		b.WriteByte('\n')
	}
	if c.Version != 0 {
		fmt.Fprintf(&b, "version=%x\n", c.Version)
	}
	return b.String()
}

// ParseConfig parses a dynamic configuration: server.N lines and an
// optional version line (hexadecimal); blank lines and # comments are
// skipped. Anything else, a malformed line or a repeated id is an error
// naming the line. Empty text (what a standalone server's
// /zookeeper/config holds) is a configuration without members.
func ParseConfig(data []byte) (Config, error) {
	c := Config{Members: map[int]Member{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	seenVersion := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
			return Config{}, fmt.Errorf("line %d %q: not key=value", n, line)
		case key == "version":
			if seenVersion {
				return Config{}, fmt.Errorf("line %d %q: a second version", n, line)
			}
			v, err := strconv.ParseInt(value, 16, 64)
			if err != nil || v < 0 {
				return Config{}, fmt.Errorf("line %d %q: version is not a hexadecimal zxid", n, line)
			}
			c.Version, seenVersion = v, true
		case strings.HasPrefix(key, "server."):
			m, err := ParseMember(key, value)
			if err != nil {
				return Config{}, fmt.Errorf("line %d %q: %w", n, line, err)
			}
			if _, dup := c.Members[m.ID]; dup {
				return Config{}, fmt.Errorf("line %d %q: server %d appears twice", n, line, m.ID)
			}
			c.Members[m.ID] = m
		default:
			return Config{}, fmt.Errorf("line %d %q: unsupported key %q", n, line, key)
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("reading the configuration: %w", err)
	}
	return c, nil
}

// ParseMember parses one configuration line split at its "=": key is
// server.N and spec what follows. Multiple addresses per server
// (ZooKeeper 3.6's "|") are not supported.
func ParseMember(key, spec string) (Member, error) {
	idText, ok := strings.CutPrefix(key, "server.")
	if !ok {
		return Member{}, fmt.Errorf("key %q is not server.N", key)
	}
	id, err := strconv.Atoi(idText)
	if err != nil || id < 0 {
		return Member{}, fmt.Errorf("server id %q is not a non-negative integer", idText)
	}
	m := Member{ID: id}
	if strings.Contains(spec, "|") {
		return Member{}, fmt.Errorf("server %d: multiple addresses are not supported", id)
	}
	serverPart, clientPart, hasClient := strings.Cut(spec, ";")
	if strings.Contains(clientPart, ";") {
		return Member{}, fmt.Errorf("server %d: more than one ';'", id)
	}

	host, rest, err := splitHost(serverPart)
	if err != nil {
		return Member{}, fmt.Errorf("server %d: %w", id, err)
	}
	if len(rest) < 2 || len(rest) > 3 {
		return Member{}, fmt.Errorf("server %d: %q is not host:quorumPort:electionPort[:type]", id, serverPart)
	}
	m.Address = host
	if m.QuorumPort, err = parsePort(rest[0]); err != nil {
		return Member{}, fmt.Errorf("server %d: quorum port: %w", id, err)
	}
	if m.ElectionPort, err = parsePort(rest[1]); err != nil {
		return Member{}, fmt.Errorf("server %d: election port: %w", id, err)
	}
	m.Type = Participant
	if len(rest) == 3 {
		switch t := LearnerType(strings.ToLower(rest[2])); t {
		case Participant, Observer:
			m.Type = t
		default:
			return Member{}, fmt.Errorf("server %d: type %q is neither %s nor %s", id, rest[2], Participant, Observer)
		}
	}

	if hasClient {
		clientPart = strings.TrimSpace(clientPart)
		portText := clientPart
		if strings.ContainsAny(clientPart, ":[") {
			host, rest, err := splitHost(clientPart)
			if err != nil {
				return Member{}, fmt.Errorf("server %d: client address: %w", id, err)
			}
			if len(rest) != 1 {
				return Member{}, fmt.Errorf("server %d: client address %q is not [host:]port", id, clientPart)
			}
			m.ClientAddress, portText = host, rest[0]
		}
		if m.ClientPort, err = parsePort(portText); err != nil {
			return Member{}, fmt.Errorf("server %d: client port: %w", id, err)
		}
	}
	return m, nil
}

// splitHost splits "host:a:b..." or "[ipv6]:a:b..." into the host and the
// fields after it.
func splitHost(s string) (string, []string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", nil, fmt.Errorf("%q: unclosed '['", s)
		}
		host := s[1:end]
		if net.ParseIP(host) == nil || !strings.Contains(host, ":") {
			return "", nil, fmt.Errorf("%q: %q in brackets is not an IPv6 address", s, host)
		}
		after, ok := strings.CutPrefix(s[end+1:], ":")
		if !ok {
			return "", nil, fmt.Errorf("%q: no port after the address", s)
		}
		return host, strings.Split(after, ":"), nil
	}
	fields := strings.Split(s, ":")
	if fields[0] == "" {
		return "", nil, fmt.Errorf("%q: no host", s)
	}
	if len(fields) < 2 {
		return "", nil, fmt.Errorf("%q: no port", s)
	}
	return fields[0], fields[1:], nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return p, nil
}
