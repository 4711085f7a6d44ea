package zkclient_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

func TestParseConfig(t *testing.T) {
	participant := func(id, q, e, c int) zkclient.Member {
		return zkclient.Member{ID: id, Address: "127.0.0.1", QuorumPort: q, ElectionPort: e, Type: zkclient.Participant, ClientAddress: "127.0.0.1", ClientPort: c}
	}
	for _, tc := range []struct {
		name    string
		data    string
		want    zkclient.Config
		wantErr string
	}{{
		name: "real 3.8.0 ensemble",
		data: string(fixture(t, "config-ensemble.txt")),
		want: zkclient.Config{Version: 0x100000000, Members: map[int]zkclient.Member{
			1: participant(1, 20459, 30777, 27045),
			2: participant(2, 30072, 28757, 22423),
			3: participant(3, 31980, 26006, 21513),
		}},
	}, {
		name: "real 3.8.0 ensemble after adding server 4",
		data: string(fixture(t, "config-reconfigured.txt")),
		want: zkclient.Config{Version: 0x100000006, Members: map[int]zkclient.Member{
			1: participant(1, 20459, 30777, 27045),
			2: participant(2, 30072, 28757, 22423),
			3: participant(3, 31980, 26006, 21513),
			4: participant(4, 31968, 23623, 28919),
		}},
	}, {
		name: "real 3.8.0 standalone server: empty",
		data: string(fixture(t, "config-standalone.txt")),
		want: zkclient.Config{Members: map[int]zkclient.Member{}},
	}, {
		name: "observer, defaults, DNS names, IPv6, comments, a dynamic file without version",
		data: `# zoo.cfg.dynamic
server.1=zk-0.zk-hs.ns.svc:2888:3888;2181
server.2 = zk-1.zk-hs.ns.svc:2888:3888:participant;0.0.0.0:2181

server.3=[fd00::3]:2888:3888:OBSERVER;[::]:2181
server.10=10.0.0.10:2888:3888
`,
		want: zkclient.Config{Members: map[int]zkclient.Member{
			1:  {ID: 1, Address: "zk-0.zk-hs.ns.svc", QuorumPort: 2888, ElectionPort: 3888, Type: zkclient.Participant, ClientPort: 2181},
			2:  {ID: 2, Address: "zk-1.zk-hs.ns.svc", QuorumPort: 2888, ElectionPort: 3888, Type: zkclient.Participant, ClientAddress: "0.0.0.0", ClientPort: 2181},
			3:  {ID: 3, Address: "fd00::3", QuorumPort: 2888, ElectionPort: 3888, Type: zkclient.Observer, ClientAddress: "::", ClientPort: 2181},
			10: {ID: 10, Address: "10.0.0.10", QuorumPort: 2888, ElectionPort: 3888, Type: zkclient.Participant},
		}},
	}, {
		name:    "not key=value",
		data:    "server.1\n",
		wantErr: "line 1",
	}, {
		name:    "unknown key",
		data:    "server.1=a:1:2\ngroup.1=1:2:3\n",
		wantErr: `line 2 "group.1=1:2:3": unsupported key`,
	}, {
		name:    "bad id",
		data:    "server.x=a:1:2\n",
		wantErr: "server id",
	}, {
		name:    "negative id",
		data:    "server.-1=a:1:2\n",
		wantErr: "server id",
	}, {
		name:    "duplicate id",
		data:    "server.1=a:1:2\nserver.1=b:1:2\n",
		wantErr: "appears twice",
	}, {
		name:    "one port",
		data:    "server.1=a:2888\n",
		wantErr: "host:quorumPort:electionPort",
	}, {
		name:    "too many fields",
		data:    "server.1=a:1:2:participant:x\n",
		wantErr: "host:quorumPort:electionPort",
	}, {
		name:    "bad port",
		data:    "server.1=a:2888:99999\n",
		wantErr: "election port",
	}, {
		name:    "bad type",
		data:    "server.1=a:1:2:voter\n",
		wantErr: "neither participant nor observer",
	}, {
		name:    "no host",
		data:    "server.1=:1:2\n",
		wantErr: "no host",
	}, {
		name:    "IPv6 without brackets",
		data:    "server.1=::1:2888:3888\n",
		wantErr: "no host",
	}, {
		name:    "unclosed bracket",
		data:    "server.1=[::1:2888:3888\n",
		wantErr: "unclosed",
	}, {
		name:    "not IPv6 in brackets",
		data:    "server.1=[host]:2888:3888\n",
		wantErr: "not an IPv6 address",
	}, {
		name:    "bad client port",
		data:    "server.1=a:1:2;127.0.0.1:x\n",
		wantErr: "client port",
	}, {
		name:    "bad client address",
		data:    "server.1=a:1:2;h:1:2\n",
		wantErr: "client address",
	}, {
		name:    "two semicolons",
		data:    "server.1=a:1:2;1;2\n",
		wantErr: "more than one",
	}, {
		name:    "multiple addresses",
		data:    "server.1=a:1:2|b:1:2\n",
		wantErr: "multiple addresses",
	}, {
		name:    "bad version",
		data:    "server.1=a:1:2\nversion=xyz\n",
		wantErr: "hexadecimal",
	}, {
		name:    "two versions",
		data:    "version=1\nversion=2\n",
		wantErr: "a second version",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := zkclient.ParseConfig([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseConfig() = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig(): %v", err)
			}
			if got.Version != tc.want.Version || !maps.Equal(got.Members, tc.want.Members) {
				t.Errorf("ParseConfig() =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestConfigString checks that a configuration renders as ZooKeeper writes
// it, so that the znode's text round-trips.
func TestConfigString(t *testing.T) {
	data := fixture(t, "config-reconfigured.txt")
	cfg, err := zkclient.ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.String(), string(data)+"\n"; got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if ids := cfg.IDs(); len(ids) != 4 || ids[0] != 1 || ids[3] != 4 {
		t.Errorf("IDs() = %v", ids)
	}

	m := zkclient.Member{ID: 7, Address: "fd00::7", QuorumPort: 2888, ElectionPort: 3888, ClientPort: 2181}
	if got, want := m.String(), "server.7=[fd00::7]:2888:3888:participant;0.0.0.0:2181"; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	key, spec, _ := strings.Cut(m.String(), "=")
	back, err := zkclient.ParseMember(key, spec)
	if err != nil || !back.Equal(m) {
		t.Errorf("ParseMember(%s) = %+v, %v; want %+v", m, back, err, m)
	}
	noClient := zkclient.Member{ID: 8, Address: "h", QuorumPort: 1, ElectionPort: 2, Type: zkclient.Observer}
	if got, want := noClient.String(), "server.8=h:1:2:observer"; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

func TestMemberEqual(t *testing.T) {
	base := zkclient.Member{ID: 1, Address: "h", QuorumPort: 1, ElectionPort: 2, ClientPort: 3}
	for _, tc := range []struct {
		name  string
		other func(m *zkclient.Member)
		equal bool
	}{
		{"identical", func(*zkclient.Member) {}, true},
		{"explicit participant", func(m *zkclient.Member) { m.Type = zkclient.Participant }, true},
		{"explicit 0.0.0.0", func(m *zkclient.Member) { m.ClientAddress = "0.0.0.0" }, true},
		{"observer", func(m *zkclient.Member) { m.Type = zkclient.Observer }, false},
		{"other client address", func(m *zkclient.Member) { m.ClientAddress = "127.0.0.1" }, false},
		{"other quorum port", func(m *zkclient.Member) { m.QuorumPort = 9 }, false},
		{"no client port", func(m *zkclient.Member) { m.ClientPort = 0 }, false},
		{"other id", func(m *zkclient.Member) { m.ID = 2 }, false},
	} {
		o := base
		tc.other(&o)
		if got := base.Equal(o); got != tc.equal {
			t.Errorf("%s: Equal() = %t, want %t", tc.name, got, tc.equal)
		}
	}
}

func TestMemberValidate(t *testing.T) {
	good := zkclient.Member{ID: 1, Address: "h", QuorumPort: 1, ElectionPort: 2}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v", good, err)
	}
	for _, tc := range []struct {
		name    string
		change  func(m *zkclient.Member)
		wantErr string
	}{
		{"negative id", func(m *zkclient.Member) { m.ID = -1 }, "negative"},
		{"no address", func(m *zkclient.Member) { m.Address = "" }, "no address"},
		{"reserved character", func(m *zkclient.Member) { m.Address = "a;b" }, "reserved"},
		{"no quorum port", func(m *zkclient.Member) { m.QuorumPort = 0 }, "quorum port"},
		{"client port too big", func(m *zkclient.Member) { m.ClientPort = 70000 }, "client port"},
		{"bad type", func(m *zkclient.Member) { m.Type = "voter" }, "type"},
	} {
		m := good
		tc.change(&m)
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error with %q", tc.name, err, tc.wantErr)
		}
	}
}
