package matrixone

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// TestStoresHealth decides, from pods and HAKeeper's view, how the stores
// are and whether the failed one is replaced now.
func TestStoresHealth(t *testing.T) {
	const ns = "db"
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	names := []string{"log-0", "log-1", "log-2"}
	id := func(pod string) string { return wire.StoreID(ns, pod) }
	replacement := build.ReplacementStoreID(&mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}, "log-2", 1)

	// view is HAKeeper running, shards 0 and 1 with a replica on each of
	// members, led by the first, and every store of up HAKeeper hears from
	// (the others known but down).
	view := func(members, up []string) wire.View {
		v := wire.View{State: wire.StateRunning, Tick: 100}
		for shard := range uint64(2) {
			s := wire.LogShard{ShardID: shard, Replicas: map[uint64]string{}, NumberOfReplicas: 3, LeaderID: 1}
			for i, m := range members {
				s.Replicas[uint64(i+1)] = m
			}
			v.LogShards = append(v.LogShards, s)
		}
		for _, pod := range names {
			store := wire.LogStore{UUID: id(pod), State: wire.StoreDown}
			for _, u := range up {
				if u == id(pod) {
					store.State = wire.StoreUp
				}
			}
			if slices.Contains(members, id(pod)) {
				store.Replicas = []wire.Replica{{ShardID: 0}, {ShardID: 1}}
			}
			v.LogStores = append(v.LogStores, store)
		}
		return v
	}
	all := []string{id("log-0"), id("log-1"), id("log-2")}
	pod := func(name string, unready time.Duration) *corev1.Pod {
		status := corev1.ConditionTrue
		if unready > 0 {
			status = corev1.ConditionFalse
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status,
				LastTransitionTime: metav1.NewTime(now.Add(-unready))}}}}
	}
	for _, tc := range []struct {
		name          string
		shardReplicas int32
		timeout       time.Duration
		// unready is how long each pod has not been ready (0: ready).
		unready     [3]time.Duration
		view        wire.View
		stores      map[string]string
		wantReason  string
		wantMessage string
		wantReplace bool
	}{
		{name: "all up", view: view(all, all), wantReason: mov1.ReasonAllStoresUp},
		{name: "down for less than the timeout", unready: [3]time.Duration{0, 0, 2 * time.Minute},
			view: view(all, all[:2]), wantReason: mov1.ReasonStoreDown, wantMessage: "replaced after 10m0s"},
		{name: "failed: replaced", unready: [3]time.Duration{0, 0, 11 * time.Minute},
			view: view(all, all[:2]), wantReason: mov1.ReasonStoreDown, wantMessage: "replacing", wantReplace: true},
		{name: "failed, HAKeeper already removed its replicas: replaced", unready: [3]time.Duration{0, 0, 11 * time.Minute},
			view: view(all[:2], all[:2]), wantReason: mov1.ReasonStoreDown, wantReplace: true},
		{name: "replacement turned off", timeout: -1, unready: [3]time.Duration{0, 0, time.Hour},
			view: view(all, all[:2]), wantReason: mov1.ReasonReplacementDisabled},
		{name: "one replica per shard: never", shardReplicas: 1, unready: [3]time.Duration{0, 0, time.Hour},
			view: view(all, all[:2]), wantReason: mov1.ReasonReplacementBlocked, wantMessage: "one replica each"},
		{name: "HAKeeper still hears from it", unready: [3]time.Duration{0, 0, time.Hour},
			view: view(all, all), wantReason: mov1.ReasonReplacementBlocked, wantMessage: "still hears"},
		{name: "two down: the majority is in doubt", unready: [3]time.Duration{0, time.Minute, time.Hour},
			view: view(all, all[:1]), wantReason: mov1.ReasonReplacementBlocked, wantMessage: "log-1 is not up either"},
		{name: "a shard without a leader", unready: [3]time.Duration{0, 0, time.Hour},
			view:       func() wire.View { v := view(all, all[:2]); v.LogShards[1].LeaderID = 0; return v }(),
			wantReason: mov1.ReasonReplacementBlocked, wantMessage: "no leader"},
		{name: "the other members are not the shard's majority", unready: [3]time.Duration{0, 0, time.Hour},
			view: func() wire.View {
				v := view(all, all[:2])
				v.LogShards[1].Replicas = map[uint64]string{1: all[2], 2: all[0], 3: "a-store-of-another-set", 4: "and-another"}
				v.LogShards[1].NumberOfReplicas = 4
				return v
			}(),
			wantReason: mov1.ReasonReplacementBlocked, wantMessage: "log shard 1 would keep 1 of its 4 replicas up"},
		{name: "replaced, HAKeeper not yet moved the replicas", stores: map[string]string{"log-2": replacement},
			view: func() wire.View {
				v := view(all[:2], all[:2])
				v.LogStores = append(v.LogStores, wire.LogStore{UUID: replacement, State: wire.StoreUp})
				return v
			}(),
			wantReason: mov1.ReasonReplicasMissing, wantMessage: "log shard 0 has 2 of 3 replicas running"},
		{name: "replaced, the new store a member but its replicas not started", stores: map[string]string{"log-2": replacement},
			view: func() wire.View {
				v := view(all[:2], all[:2])
				v.LogStores = append(v.LogStores, wire.LogStore{UUID: replacement, State: wire.StoreUp})
				v.LogShards[0].Replicas[3], v.LogShards[1].Replicas[3] = replacement, replacement
				return v
			}(),
			wantReason: mov1.ReasonReplicasMissing, wantMessage: "log shard 1 has 2 of 3 replicas running"},
		{name: "replaced, its replicas running", stores: map[string]string{"log-2": replacement},
			view: func() wire.View {
				v := view(all[:2], all[:2])
				v.LogStores = append(v.LogStores, wire.LogStore{UUID: replacement, State: wire.StoreUp,
					Replicas: []wire.Replica{{ShardID: 0}, {ShardID: 1}}})
				v.LogShards[0].Replicas[3], v.LogShards[1].Replicas[3] = replacement, replacement
				return v
			}(),
			wantReason: mov1.ReasonAllStoresUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "log"}, Spec: mov1.LogSetSpec{Replicas: 3, ShardReplicas: 3}}
			if tc.shardReplicas != 0 {
				l.Spec.ShardReplicas = tc.shardReplicas
			}
			if tc.timeout != 0 {
				l.Spec.StoreFailureTimeout = &metav1.Duration{Duration: max(tc.timeout, 0)}
			}
			mov1.DefaultLogSet(l)
			st := &logState{ns: ns, pods: map[int]*corev1.Pod{}, view: tc.view, viewOK: true, now: now, stores: tc.stores}
			for i, name := range names {
				st.pods[i] = pod(name, tc.unready[i])
			}
			reason, message, replace := st.storesHealth(l)
			if reason != tc.wantReason || !strings.Contains(message, tc.wantMessage) || (replace != nil) != tc.wantReplace {
				t.Fatalf("storesHealth() = %s %q, replace %v; want %s %q, replace %v",
					reason, message, replace != nil, tc.wantReason, tc.wantMessage, tc.wantReplace)
			}
			if replace != nil {
				if replace.name != "log-2" {
					t.Errorf("replaces %s, want log-2", replace.name)
				}
				if got := st.nextStoreID(l, "log-2", st.storeID("log-2")); got != replacement {
					t.Errorf("new store %s, want generation 1's %s", got, replacement)
				}
			}
		})
	}
}

// TestNextStoreIDSkipsKnownGenerations: a pod replaced twice takes a third
// UUID, never one HAKeeper knew.
func TestNextStoreIDSkipsKnownGenerations(t *testing.T) {
	l := &LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "log"}}
	first := build.ReplacementStoreID(l, "log-1", 1)
	st := &logState{ns: "db", stores: map[string]string{"log-1": first},
		view: wire.View{LogStores: []wire.LogStore{{UUID: wire.StoreID("db", "log-1")}, {UUID: first}}}}
	if got, want := st.nextStoreID(l, "log-1", st.storeID("log-1")), build.ReplacementStoreID(l, "log-1", 2); got != want {
		t.Errorf("nextStoreID = %s, want %s", got, want)
	}
}

// TestViewPredates checks that a view answered before a pod became ready
// (the last good view may be MaxViewAge old, longer than RestartSettle)
// cannot justify the next restart, and a newer one can.
func TestViewPredates(t *testing.T) {
	ready := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	if why := viewPredates(ready.Add(-time.Second), "log-1", ready); why == "" {
		t.Error("a view from before log-1 was ready justified a restart")
	}
	if why := viewPredates(ready.Add(time.Second), "log-1", ready); why != "" {
		t.Errorf("a newer view: %s", why)
	}
}
