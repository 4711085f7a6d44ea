package obsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The simulator's own protocol between nodes, HTTP with JSON bodies on the
// RPC port. OceanBase's RPC is binary and undocumented; nothing of Steward
// speaks this one except the tests' knob calls.
const (
	pathHello = "/obsim/v1/hello" // GET: who the node is
	pathJoin  = "/obsim/v1/join"  // POST State: join the cluster (BOOTSTRAP, ADD SERVER)
	pathState = "/obsim/v1/state" // POST State: the RootService's heartbeat
	pathLeave = "/obsim/v1/leave" // POST: the server was deleted
	pathExec  = "/obsim/v1/exec"  // POST execRequest: run a statement on the RootService
	pathKnobs = "/obsim/v1/knobs" // GET, POST Knobs: the test control endpoint
)

// hello is a node's answer to GET hello and to a heartbeat.
type hello struct {
	Addr         string    `json:"addr"`
	ClusterName  string    `json:"clusterName"`
	ClusterID    int64     `json:"clusterID"`
	Zone         string    `json:"zone"`
	Joined       bool      `json:"joined"`
	IsRS         bool      `json:"isRS"`
	Term         int64     `json:"term"`
	Version      int64     `json:"version"`
	ProcessStart time.Time `json:"processStart"`
	BuildVersion string    `json:"buildVersion"`
}

type execRequest struct {
	Session session `json:"session"`
	Query   string  `json:"query,omitempty"`
	// Data, instead of Query: a user tenant's data statements.
	Data *dataRequest `json:"data,omitempty"`
}

type execReply struct {
	Result *result `json:"result,omitempty"`
	Error  *Error  `json:"error,omitempty"`
}

func (n *Node) hello() hello {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := hello{Addr: n.cfg.Addr, ClusterName: n.cfg.ClusterName, ClusterID: n.cfg.ClusterID, Zone: n.cfg.Zone,
		IsRS: n.isRS, ProcessStart: n.start, BuildVersion: n.knobs.BuildVersion}
	if n.state != nil {
		h.Joined, h.Term, h.Version = true, n.state.Term, n.state.Version
	}
	return h
}

func (n *Node) rpcHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathHello, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, n.hello()) })
	mux.HandleFunc("POST "+pathJoin, func(w http.ResponseWriter, r *http.Request) {
		var s State
		if !readJSON(w, r, &s) {
			return
		}
		if err := n.adopt(&s, true); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, http.StatusOK, n.hello())
	})
	mux.HandleFunc("POST "+pathState, func(w http.ResponseWriter, r *http.Request) {
		var s State
		if !readJSON(w, r, &s) {
			return
		}
		if err := n.adopt(&s, false); err != nil {
			writeJSON(w, http.StatusConflict, n.hello())
			return
		}
		writeJSON(w, http.StatusOK, n.hello())
	})
	mux.HandleFunc("POST "+pathLeave, func(w http.ResponseWriter, _ *http.Request) {
		n.leave()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+pathExec, func(w http.ResponseWriter, r *http.Request) {
		var req execRequest
		if !readJSON(w, r, &req) {
			return
		}
		if !n.IsRootService() {
			writeJSON(w, http.StatusOK, execReply{Error: errorf(codeRPC, "%s is not the RootService", n.cfg.Addr)})
			return
		}
		res, err := n.serve(r.Context(), req)
		writeJSON(w, http.StatusOK, execReply{Result: res, Error: err})
	})
	mux.HandleFunc("GET "+pathKnobs, func(w http.ResponseWriter, _ *http.Request) {
		n.mu.Lock()
		k := n.knobs
		n.mu.Unlock()
		writeJSON(w, http.StatusOK, k)
	})
	mux.HandleFunc("POST "+pathKnobs, func(w http.ResponseWriter, r *http.Request) {
		var k Knobs
		if !readJSON(w, r, &k) {
			return
		}
		if err := n.SetKnobs(k); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// adopt takes a state the RootService sent. A join (BOOTSTRAP, ADD SERVER)
// is taken by a node that is in no cluster yet; a heartbeat only by a
// member of the same cluster, from a RootService of its term or newer. A
// node that lost its store does not rejoin by a heartbeat: it is a new,
// empty server, as an observer on an empty disk is.
func (n *Node) adopt(s *State, join bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.ClusterName != n.cfg.ClusterName || s.ClusterID != n.cfg.ClusterID {
		return fmt.Errorf("%s belongs to cluster %s (%d), not %s (%d)", n.cfg.Addr, n.cfg.ClusterName,
			n.cfg.ClusterID, s.ClusterName, s.ClusterID)
	}
	if s.server(n.cfg.Addr) == nil {
		return fmt.Errorf("%s is not a server of the cluster", n.cfg.Addr)
	}
	switch {
	case join && n.state != nil:
		return fmt.Errorf("%s is already in a cluster", n.cfg.Addr)
	case !join && n.state == nil:
		return fmt.Errorf("%s has an empty store", n.cfg.Addr)
	case !join && s.Term < n.state.Term:
		return fmt.Errorf("stale RootService term %d < %d", s.Term, n.state.Term)
	}
	if n.isRS && s.RS != n.cfg.Addr {
		n.log.Info("Another server took over the RootService", "rs", s.RS, "term", s.Term)
		n.isRS = false
	}
	if !n.isRS && s.RS == n.cfg.Addr && !join {
		n.log.Info("Took over the RootService, handed over", "term", s.Term)
		n.isRS = true
	}
	n.state = s
	n.lastRS = time.Now()
	if join {
		// An observer acknowledges joining once its store says so: killed
		// right after, it comes back as the server it joined as.
		n.save()
	}
	return nil
}

// call sends one RPC to addr and decodes the answer into out (when not
// nil). A non-2xx status is an error.
func (n *Node) call(ctx context.Context, method, addr, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+n.dial(addr)+path, body)
	if err != nil {
		return err
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if out != nil && len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s%s: %w", addr, path, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s%s: %s: %s", addr, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// loop runs the node's clock: the RootService's heartbeats and state
// changes, a member's elections.
func (n *Node) loop() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastPush, lastElection time.Time
	for {
		select {
		case <-n.stop:
			return
		case <-n.push:
		case <-tick.C:
		}
		now := time.Now()
		n.mu.Lock()
		isRS, joined, hb, lease := n.isRS, n.state != nil, n.knobs.Heartbeat.Duration, n.knobs.Lease.Duration
		if isRS {
			n.tick(now)
		}
		n.save()
		sinceRS := now.Sub(n.lastRS)
		n.mu.Unlock()
		if isRS {
			n.runBackups(now)
		}
		switch {
		case isRS && (now.Sub(lastPush) >= hb || len(n.push) > 0):
			lastPush = now
			n.heartbeat(now)
		case isRS:
			// A pass for the tick only.
		case joined && sinceRS > lease && now.Sub(lastElection) > 2*hb:
			lastElection = now
			n.elect()
		}
	}
}

// heartbeat pushes the state to every other server and records who
// answered.
func (n *Node) heartbeat(now time.Time) {
	n.mu.Lock()
	if !n.isRS {
		n.mu.Unlock()
		return
	}
	snap := n.state.clone()
	timeout := n.knobs.Heartbeat.Duration * 2
	n.mu.Unlock()
	type answer struct {
		addr string
		h    hello
		err  error
	}
	var wg sync.WaitGroup
	answers := make(chan answer, len(snap.Servers))
	for _, sv := range snap.Servers {
		if sv.Addr == n.cfg.Addr {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
			defer cancel()
			var h hello
			err := n.call(ctx, http.MethodPost, addr, pathState, snap, &h)
			answers <- answer{addr, h, err}
		}(sv.Addr)
	}
	wg.Wait()
	close(answers)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.isRS {
		return
	}
	for a := range answers {
		if a.err != nil && a.h.Term > n.state.Term {
			n.log.Info("A newer RootService exists; stepping down", "term", a.h.Term)
			n.isRS = false
			return
		}
		sv := n.state.server(a.addr)
		if a.err != nil || sv == nil {
			continue
		}
		n.heard(sv, a.h.ProcessStart, a.h.BuildVersion, now)
	}
}

// heard records a heartbeat answer from sv (n.mu held): a server back from
// INACTIVE is ACTIVE again, and a restarted process serves again after the
// start-service delay.
func (n *Node) heard(sv *Server, processStart time.Time, build string, now time.Time) {
	sv.LastHeartbeat = now
	if !processStart.Equal(sv.ProcessStart) {
		sv.ProcessStart, sv.BuildVersion = processStart, build
		sv.StartService, sv.ServeAt = nil, ptrTime(now.Add(n.knobs.StartServiceDelay.Duration))
		n.state.snapshotStatic(sv)
		n.changed()
	}
	if sv.Status == ServerInactive {
		sv.Status = ServerActive
		n.log.Info("Server is active again", "peer", sv.Addr)
		n.changed()
	}
}

// elect runs when a member has not heard from the RootService for a
// lease: if another server is the RootService it waits for its push;
// otherwise the live member with the newest state takes over, provided the
// live members span a majority of the zones (the sys tenant's majority).
func (n *Node) elect() {
	n.mu.Lock()
	if n.state == nil || n.isRS {
		n.mu.Unlock()
		return
	}
	snap := n.state.clone()
	n.mu.Unlock()
	var mu sync.Mutex
	var replies []hello
	var wg sync.WaitGroup
	for _, sv := range snap.Servers {
		if sv.Addr == n.cfg.Addr || sv.Status == ServerDeleting {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var h hello
			if err := n.call(ctx, http.MethodGet, addr, pathHello, nil, &h); err == nil && h.Joined &&
				h.ClusterName == snap.ClusterName && h.ClusterID == snap.ClusterID {
				mu.Lock()
				replies = append(replies, h)
				mu.Unlock()
			}
		}(sv.Addr)
	}
	wg.Wait()
	zones := map[string]bool{n.cfg.Zone: true}
	best := hello{Addr: n.cfg.Addr, Version: snap.Version, Term: snap.Term}
	term := snap.Term
	for _, h := range replies {
		if h.IsRS && h.Term >= snap.Term {
			return // it will push to us
		}
		zones[h.Zone] = true
		term = max(term, h.Term)
		if h.Version > best.Version || (h.Version == best.Version && h.Addr < best.Addr) {
			best = h
		}
	}
	if len(zones)*2 <= len(snap.Zones) {
		n.log.Info("No RootService and no majority of zones alive", "alive", len(zones), "zones", len(snap.Zones))
		return
	}
	if best.Addr != n.cfg.Addr {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil || n.isRS {
		return
	}
	n.isRS = true
	n.state.Term = term + 1
	n.state.RS = n.cfg.Addr
	if sv := n.state.server(n.cfg.Addr); sv != nil {
		n.heard(sv, n.start, n.knobs.BuildVersion, time.Now())
	}
	// The others' heartbeats start from now, not from the old RootService's.
	for _, sv := range n.state.Servers {
		if sv.Status == ServerActive {
			sv.LastHeartbeat = time.Now()
		}
	}
	n.changed()
	n.log.Info("Took over the RootService", "term", n.state.Term)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(v); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}
