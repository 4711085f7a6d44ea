package hakeeper

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// TestStoreID tests wire.StoreID, which mo-agent computes in the pods,
// with vectors computed independently with Python's uuid.uuid5. (wire is a
// module of its own; its tests live here, where make test runs them.)
func TestStoreID(t *testing.T) {
	for _, tc := range []struct{ namespace, pod, want string }{
		{"default", "mo-log-0", "f91489ef-bce2-58cc-b6b1-c5cc5d288b37"},
		{"default", "mo-log-1", "e2595557-d655-5375-8d50-0e223a28d018"},
		{"team-a", "orders-tn-0", "deea48aa-d97f-5c42-bbf8-28320209429d"},
	} {
		if got := wire.StoreID(tc.namespace, tc.pod); got != tc.want {
			t.Errorf("StoreID(%q, %q) = %s, want %s", tc.namespace, tc.pod, got, tc.want)
		}
	}
}

func readView(t *testing.T, name string) View {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var v View
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRealView reads a view real MatrixOne gave (testdata/README.md): the
// stores are the ones mo-agent derived from the pods' names, and the
// controllers' questions have the answers a healthy cluster gives.
func TestRealView(t *testing.T) {
	v := readView(t, "view-running.json")
	if !v.Running() {
		t.Errorf("state %q, want running", v.State)
	}
	if ids := v.LeaderlessShards(); len(ids) != 0 {
		t.Errorf("leaderless shards %v", ids)
	}
	if len(v.LogShards) != 2 {
		t.Errorf("%d log shards, want 2 (HAKeeper's and the TN's)", len(v.LogShards))
	}
	logUUID := wire.StoreID("smoke", "mo-log-0")
	if s, ok := v.LogStore(logUUID); !ok || s.State != wire.StoreUp {
		t.Errorf("log store %s: %+v, %v; want it up", logUUID, s, ok)
	}
	for _, s := range v.LogShards {
		if s.Replicas[s.LeaderID] != logUUID {
			t.Errorf("shard %d: leader %d is %q, want the log store", s.ShardID, s.LeaderID, s.Replicas[s.LeaderID])
		}
	}
	if len(v.TNStores) != 1 || v.TNStores[0].UUID != wire.StoreID("smoke", "mo-tn-0") {
		t.Errorf("TN stores %+v", v.TNStores)
	}
	if len(v.CNStores) != 1 || v.CNStores[0].UUID != wire.StoreID("smoke", "mo-cn-0") || v.CNStores[0].WorkState != wire.WorkStateWorking {
		t.Errorf("CN stores %+v", v.CNStores)
	}
	if len(v.ProxyStores) != 1 || v.ProxyStores[0].UUID != wire.StoreID("smoke", "mo-proxy-0") {
		t.Errorf("proxy stores %+v", v.ProxyStores)
	}
	// One replica: the only log store can never go.
	if r := v.MajorityKeptWithout(logUUID); len(r) != 2 {
		t.Errorf("without the only log store: %v, want both shards reported", r)
	}
}

// TestRealViewThreeStores reads a real view of three log stores, each
// holding a replica of both shards: any one of them may go, no two may.
func TestRealViewThreeStores(t *testing.T) {
	v := readView(t, "view-three-log-stores.json")
	if !v.Running() || len(v.LeaderlessShards()) != 0 {
		t.Fatalf("state %q, leaderless %v", v.State, v.LeaderlessShards())
	}
	stores := make([]string, 3)
	for i := range stores {
		stores[i] = wire.StoreID("default", fmt.Sprintf("mo-log-%d", i))
		if s, ok := v.LogStore(stores[i]); !ok || s.State != wire.StoreUp || len(s.Replicas) != 2 {
			t.Errorf("mo-log-%d (%s): %+v, %v; want it up with a replica of each shard", i, stores[i], s, ok)
		}
	}
	for _, s := range v.LogShards {
		if s.NumberOfReplicas != 3 || len(s.Replicas) != 3 {
			t.Errorf("shard %d: %d of %d replicas, want 3 of 3", s.ShardID, len(s.Replicas), s.NumberOfReplicas)
		}
	}
	for _, one := range stores {
		if r := v.MajorityKeptWithout(one); len(r) != 0 {
			t.Errorf("without %s: %v, want the majority kept", one, r)
		}
	}
	if r := v.MajorityKeptWithout(stores[0], stores[2]); len(r) != 2 {
		t.Errorf("without two stores: %v, want both shards reported", r)
	}
}

// threeStores is a view of three log stores a, b and c, each holding a
// replica of shards 0 and 1; down lists those HAKeeper does not hear from.
func threeStores(down ...string) View {
	v := View{State: wire.StateRunning}
	for i, id := range []uint64{0, 1} {
		v.LogShards = append(v.LogShards, wire.LogShard{ShardID: id, NumberOfReplicas: 3, LeaderID: uint64(131072 + 10*i),
			Replicas: map[uint64]string{uint64(131072 + 10*i): "a", uint64(131073 + 10*i): "b", uint64(131074 + 10*i): "c"}})
	}
	for _, s := range []string{"a", "b", "c"} {
		state := wire.StoreUp
		if slices.Contains(down, s) {
			state = wire.StoreDown
		}
		v.LogStores = append(v.LogStores, wire.LogStore{UUID: s, State: state, Replicas: []wire.Replica{{ShardID: 0}, {ShardID: 1}}})
	}
	return v
}

func TestMajorityKeptWithout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		view    View
		without []string
		want    string // "" when the majority is kept; else a reason's text
	}{
		{name: "a failed store replaced, the other two up", view: threeStores("c"), without: []string{"c"}},
		{name: "a healthy store taken down, all up", view: threeStores(), without: []string{"a"}},
		{name: "a failed store replaced while another is down", view: threeStores("b", "c"), without: []string{"c"},
			want: "log shard 0 would keep 1 of its 3 replicas up, and needs 2"},
		{name: "a healthy store taken down while another is down", view: threeStores("c"), without: []string{"a"},
			want: "log shard 1 would keep 1 of its 3 replicas up, and needs 2"},
		{name: "two stores at once", view: threeStores(), without: []string{"a", "b"},
			want: "log shard 0 would keep 1 of its 3 replicas up, and needs 2"},
		{name: "a store that holds no replica", view: threeStores("b", "c"), without: []string{"d"}},
		{name: "a member HAKeeper does not list counts as down", view: func() View {
			v := threeStores()
			v.LogStores = v.LogStores[:1] // b and c unknown
			return v
		}(), without: []string{"a"}, want: "log shard 0 would keep 0 of its 3 replicas up, and needs 2"},
		{name: "a shard with a replica missing still needs a majority of its configured count", view: func() View {
			v := threeStores()
			delete(v.LogShards[0].Replicas, 131074) // c's replica of shard 0 was removed
			return v
		}(), without: []string{"b"}, want: "log shard 0 would keep 1 of its 3 replicas up, and needs 2"},
		{name: "a member whose store has not started its replica counts as down", view: func() View {
			v := threeStores()
			v.LogStores[2].Replicas = []wire.Replica{{ShardID: 1}} // c was just added to shard 0
			return v
		}(), without: []string{"b"}, want: "log shard 0 would keep 1 of its 3 replicas up, and needs 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.view.MajorityKeptWithout(tc.without...)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("reasons %v, want none", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, tc.want) }) {
				t.Fatalf("reasons %v, want one saying %q", got, tc.want)
			}
		})
	}
}

func TestLeaderlessShards(t *testing.T) {
	v := threeStores()
	v.LogShards[1].LeaderID = 0
	if got := v.LeaderlessShards(); !slices.Equal(got, []uint64{1}) {
		t.Errorf("leaderless %v, want [1]", got)
	}
}

func TestFreshest(t *testing.T) {
	if _, ok := Freshest(nil); ok {
		t.Error("a view out of none")
	}
	got, _ := Freshest([]View{{Tick: 7, State: "old"}, {Tick: 9, State: "new"}, {Tick: 8}})
	if got.State != "new" {
		t.Errorf("freshest %+v, want the tick 9 view", got)
	}
}
