package obsim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
)

// query runs one statement a client sent to this node: session settings
// here, BOOTSTRAP on a node in no cluster, a user tenant's data statements
// through its connection's transaction (data.go), everything else on the
// RootService (this node, or forwarded to it).
func (n *Node) query(ctx context.Context, c *mysql.Conn, q string) (*result, *Error) {
	sess := sessionOf(c)
	if n.cfg.Trace != nil {
		n.cfg.Trace(q)
	}
	if err := n.fault(q); err != nil {
		return nil, err
	}
	if !strings.EqualFold(sess.Tenant, sysTenantName) && (txnControl(q) != "" || isDataStatement(q)) {
		return n.dataQuery(ctx, c, sess, q)
	}
	p, err := newParser(q)
	if err != nil {
		return nil, err
	}
	switch {
	case p.done():
		return nil, errorf(1065, "Query was empty")
	case isCryptoSet(q):
		p.keywords("SET")
		return setCrypto(c, p)
	case p.keywords("SET") && !p.keywords("GLOBAL"):
		return &result{}, nil // session variables: ob_query_timeout, names
	case p.keywords("ALTER", "SYSTEM", "BOOTSTRAP"):
		return n.bootstrap(ctx, p)
	case isSelectWithoutFrom(q):
		return selectQuery(q, func(string) (table, *Error) { return table{}, nil })
	}
	return n.onRootService(ctx, execRequest{Session: sess, Query: q})
}

// onRootService runs a request on the RootService: here, or forwarded to it.
func (n *Node) onRootService(ctx context.Context, req execRequest) (*result, *Error) {
	n.mu.Lock()
	joined, isRS := n.state != nil, n.isRS
	var rs string
	if joined {
		rs = n.state.RS
	}
	n.mu.Unlock()
	switch {
	case !joined:
		return nil, errorf(codeNotInit, "Server is initializing: it is in no cluster yet (not bootstrapped or added)")
	case isRS:
		return n.serve(ctx, req)
	}
	var reply execReply
	if err := n.call(ctx, http.MethodPost, rs, pathExec, req, &reply); err != nil {
		return nil, errorf(codeRPC, "cannot reach the RootService %s: %v", rs, err)
	}
	if reply.Error != nil {
		return nil, reply.Error
	}
	return reply.Result, nil
}

// serve runs a request on the RootService.
func (n *Node) serve(ctx context.Context, req execRequest) (*result, *Error) {
	if req.Data != nil {
		return n.execDataRequest(req.Session, *req.Data)
	}
	return n.exec(ctx, req.Session, req.Query)
}

// isSelectWithoutFrom reports a SELECT of expressions only (select 1), which
// any node answers.
func isSelectWithoutFrom(q string) bool {
	f := strings.Fields(strings.ToUpper(q))
	return len(f) > 0 && f[0] == "SELECT" && !slices.Contains(f, "FROM")
}

// exec runs a statement on the RootService.
func (n *Node) exec(ctx context.Context, sess session, q string) (*result, *Error) {
	p, err := newParser(q)
	if err != nil {
		return nil, err
	}
	if p.keywords("SELECT") {
		n.mu.Lock()
		defer n.mu.Unlock()
		t := n.state.tenantByName(sess.Tenant)
		if t == nil {
			return nil, missing("Unknown tenant '%s'", sess.Tenant)
		}
		return selectQuery(q, func(name string) (table, *Error) { return n.state.view(name, t.ID) })
	}
	// A change is acknowledged once the members have it, so that a new
	// RootService does not lose it (OceanBase commits to a majority).
	defer n.heartbeat(time.Now())
	if p.keywords("ALTER", "SYSTEM", "ADD", "SERVER") {
		return n.addServer(ctx, p)
	}
	if p.keywords("CREATE", "TENANT") {
		return n.createTenant(ctx, p, false)
	}
	if p.keywords("CREATE", "STANDBY", "TENANT") {
		if !strings.EqualFold(sess.Tenant, sysTenantName) {
			return nil, notAllowed("only the sys tenant may run: %s", q)
		}
		return n.createTenant(ctx, p, true)
	}
	if p.keywords("ALTER", "SYSTEM", "SWITCHOVER", "TO", "PRIMARY", "TENANT") {
		if !strings.EqualFold(sess.Tenant, sysTenantName) {
			return nil, notAllowed("only the sys tenant may run: %s", q)
		}
		return n.switchoverToPrimary(ctx, p)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !strings.EqualFold(sess.Tenant, sysTenantName) && !isUserStatement(q) && !isBackupStatement(q) {
		return nil, notAllowed("only the sys tenant may run: %s", q)
	}
	res, e := n.mutate(sess, p)
	if e == nil {
		n.changed()
	}
	return res, e
}

func isUserStatement(q string) bool {
	up := strings.ToUpper(strings.TrimSpace(q))
	return strings.HasPrefix(up, "CREATE USER") || strings.HasPrefix(up, "ALTER USER") ||
		strings.HasPrefix(up, "GRANT") || strings.HasPrefix(up, "DROP USER") || strings.HasPrefix(up, "SET GLOBAL")
}

// mutate runs a statement that changes the state (n.mu held).
func (n *Node) mutate(sess session, p *parser) (*result, *Error) {
	s := n.state
	now := time.Now()
	if res, err, ok := n.mutateBackup(sess, p, now); ok {
		return res, err
	}
	switch {
	case p.keywords("ALTER", "SYSTEM", "DELETE", "SERVER"):
		return n.deleteServer(p)
	case p.keywords("ALTER", "SYSTEM", "CANCEL", "DELETE", "SERVER"):
		addr, zone, err := serverClause(p)
		if err != nil {
			return nil, err
		}
		sv := s.server(addr)
		if sv == nil || (zone != "" && sv.Zone != zone) {
			return nil, missing("server %s does not exist", addr)
		}
		if sv.Status != ServerDeleting {
			return nil, notAllowed("server %s is not being deleted", addr)
		}
		sv.Status = ServerActive
		if now.Sub(sv.LastHeartbeat) > n.knobs.Lease.Duration {
			sv.Status = ServerInactive
		}
		return &result{}, nil
	case p.keywords("ALTER", "SYSTEM", "ADD", "ZONE"):
		zone, err := p.value()
		if err != nil {
			return nil, err
		}
		if s.zone(zone) != nil {
			return nil, errorf(codeEntryExist, "zone '%s' already exists", zone)
		}
		s.Zones = append(s.Zones, &Zone{Name: zone, Status: ZoneInactive})
		return &result{}, p.end()
	case p.keywords("ALTER", "SYSTEM", "START", "ZONE"):
		z, err := n.zoneArg(p)
		if err != nil {
			return nil, err
		}
		z.Status = ZoneActive
		return &result{}, nil
	case p.keywords("ALTER", "SYSTEM", "STOP", "ZONE"):
		z, err := n.zoneArg(p)
		if err != nil {
			return nil, err
		}
		if z.Status == ZoneActive && !s.majorityWithout(z.Name) {
			return nil, notAllowed("stopping zone '%s' would leave a tenant's replicas without a majority", z.Name)
		}
		z.Status = ZoneInactive
		return &result{}, nil
	case p.keywords("ALTER", "SYSTEM", "DELETE", "ZONE"):
		z, err := n.zoneArg(p)
		if err != nil {
			return nil, err
		}
		switch {
		case z.Status != ZoneInactive:
			return nil, notAllowed("zone '%s' is active; stop it first", z.Name)
		case len(s.serversIn(z.Name)) > 0:
			return nil, notAllowed("zone '%s' still has servers", z.Name)
		case s.poolIn(z.Name) != "":
			return nil, notAllowed("resource pool '%s' still uses zone '%s'", s.poolIn(z.Name), z.Name)
		}
		s.Zones = slices.DeleteFunc(s.Zones, func(o *Zone) bool { return o == z })
		return &result{}, nil
	case p.keywords("ALTER", "SYSTEM", "RUN", "UPGRADE", "JOB"):
		return n.runUpgradeJob(p)
	case p.keywords("ALTER", "SYSTEM", "SET"):
		return n.setParameter(sess, p)
	case p.keywords("CREATE", "USER"):
		return n.createUser(sess, p)
	case p.keywords("ALTER", "USER"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		u := s.user(n.tenantID(sess), name)
		if u == nil {
			return nil, missing("user '%s' does not exist", name)
		}
		if !p.keywords("IDENTIFIED", "BY") {
			return nil, p.syntax()
		}
		if u.Password, err = p.value(); err != nil {
			return nil, err
		}
		return &result{}, p.end()
	case p.keywords("GRANT"):
		for !p.done() && !p.keywords("TO") {
			p.pos++
		}
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		u := s.user(n.tenantID(sess), name)
		if u == nil {
			return nil, missing("user '%s' does not exist", name)
		}
		u.Grants = p.q
		return &result{}, nil
	case p.keywords("DROP", "USER"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		tid := n.tenantID(sess)
		s.Users = slices.DeleteFunc(s.Users, func(u *User) bool { return u.TenantID == tid && strings.EqualFold(u.Name, name) })
		return &result{}, nil
	}
	return n.mutateResources(p, now)
}

func (n *Node) tenantID(sess session) int64 {
	if t := n.state.tenantByName(sess.Tenant); t != nil {
		return t.ID
	}
	return -1
}

func (n *Node) zoneArg(p *parser) (*Zone, *Error) {
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	z := n.state.zone(name)
	if z == nil {
		return nil, missing("zone '%s' does not exist", name)
	}
	return z, p.end()
}

// serverClause reads "'ip:port' [ZONE [=] 'zone']".
func serverClause(p *parser) (addr, zone string, err *Error) {
	if addr, err = p.value(); err != nil {
		return "", "", err
	}
	if p.keywords("ZONE") {
		p.punct('=')
		if zone, err = p.value(); err != nil {
			return "", "", err
		}
	}
	return addr, zone, p.end()
}

// bootstrap runs ALTER SYSTEM BOOTSTRAP ZONE 'z1' SERVER 'a1' [, ZONE ...]
// on a node in no cluster: it checks every listed server (reachable, same
// cluster name and id, in no cluster, in its zone), takes the bootstrap's
// time, and makes this node the RootService of a new cluster whose servers
// are the listed ones.
func (n *Node) bootstrap(ctx context.Context, p *parser) (*result, *Error) {
	type member struct{ zone, addr string }
	var members []member
	for !p.done() {
		p.keywords("REGION")
		if p.peek().kind == 's' && len(members) == 0 && !p.keywords("ZONE") {
			p.pos++ // a REGION name
		}
		p.keywords("ZONE")
		zone, err := p.value()
		if err != nil {
			return nil, err
		}
		if !p.keywords("SERVER") {
			return nil, p.syntax()
		}
		addr, err := p.value()
		if err != nil {
			return nil, err
		}
		members = append(members, member{zone, addr})
		p.punct(',')
	}
	if len(members) == 0 {
		return nil, invalid("BOOTSTRAP needs at least one ZONE ... SERVER ...")
	}
	n.mu.Lock()
	if n.state != nil || n.busy {
		n.mu.Unlock()
		return nil, notAllowed("the cluster is already bootstrapped")
	}
	n.busy = true
	delay := n.knobs.BootstrapDelay.Duration
	n.mu.Unlock()
	defer func() { n.mu.Lock(); n.busy = false; n.mu.Unlock() }()

	self := false
	zones := map[string]bool{}
	starts := map[string]time.Time{}
	for _, m := range members {
		if zones[m.zone] {
			return nil, invalid("BOOTSTRAP names zone '%s' twice: one server per zone", m.zone)
		}
		zones[m.zone] = true
		if m.addr == n.cfg.Addr {
			if m.zone != n.cfg.Zone {
				return nil, invalid("server %s was started in zone '%s', not '%s'", m.addr, n.cfg.Zone, m.zone)
			}
			self, starts[m.addr] = true, n.start
			continue
		}
		h, err := n.checkPeer(ctx, m.addr, m.zone)
		if err != nil {
			return nil, err
		}
		starts[m.addr] = h.ProcessStart
	}
	if !self {
		return nil, invalid("the bootstrap must list the server it runs on (%s)", n.cfg.Addr)
	}
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, errorf(4012, "Timeout: the bootstrap was interrupted")
	}
	now := time.Now()
	s := &State{ClusterName: n.cfg.ClusterName, ClusterID: n.cfg.ClusterID, Term: 1, RS: n.cfg.Addr, NextID: 1000}
	s.UnitConfigs = []*UnitConfig{{ID: 1, Name: sysUnitConfig, MaxCPU: 1, MinCPU: 1, Memory: 2 << 30, LogDisk: 2 << 30}}
	pool := &Pool{ID: 1, Name: sysPool, TenantID: sysTenantID, UnitCount: 1, ConfigID: 1}
	s.Tenants = []*Tenant{{ID: sysTenantID, Name: sysTenantName, Type: "SYS", Status: TenantNormal, Charset: "utf8mb4"}}
	s.Users = []*User{{TenantID: sysTenantID, Name: "root"}}
	s.setDataVersion(sysTenantID, dataVersion(n.knobs.BuildVersion))
	var locality []string
	for i, m := range members {
		s.Zones = append(s.Zones, &Zone{Name: m.zone, Status: ZoneActive})
		sv := &Server{ID: int64(i + 1), Addr: m.addr, SQLPort: n.cfg.SQLPort, Zone: m.zone, Status: ServerActive,
			ProcessStart: starts[m.addr], LastHeartbeat: now, BuildVersion: n.knobs.BuildVersion,
			ServeAt: ptrTime(now.Add(n.knobs.StartServiceDelay.Duration))}
		s.snapshotStatic(sv)
		s.Servers = append(s.Servers, sv)
		pool.Zones = append(pool.Zones, m.zone)
		s.Units = append(s.Units, &Unit{ID: int64(i + 1), PoolID: 1, Zone: m.zone, Server: m.addr, Status: "ACTIVE"})
		locality = append(locality, "FULL{1}@"+m.zone)
	}
	s.Pools = []*Pool{pool}
	s.Tenants[0].Locality = strings.Join(locality, ", ")
	s.Tenants[0].PrimaryZone = "RANDOM"
	for name, value := range n.cfg.Options {
		if _, ok := paramSpecOf(name); ok {
			s.setParam(Param{Name: strings.ToLower(name), Value: value, Scope: "CLUSTER"})
		}
	}
	for _, m := range members {
		if m.addr == n.cfg.Addr {
			continue
		}
		if err := n.call(ctx, http.MethodPost, m.addr, pathJoin, s, nil); err != nil {
			return nil, errorf(codeRPC, "server %s did not join: %v", m.addr, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state, n.isRS = s, true
	n.changed()
	n.log.Info("Bootstrapped the cluster; this server is the RootService", "zones", len(members))
	return &result{}, nil
}

// checkPeer asks the node at addr who it is: it must answer, be started
// as addr for this cluster and zone, and be in no cluster yet.
func (n *Node) checkPeer(ctx context.Context, addr, zone string) (hello, *Error) {
	var h hello
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := n.call(cctx, http.MethodGet, addr, pathHello, nil, &h); err != nil {
		return h, errorf(codeRPC, "server %s is not reachable: %v", addr, err)
	}
	switch {
	case h.Addr != addr:
		// An observer is the server of the address it was started with
		// (-I), whatever routes to it.
		return h, invalid("server %s answers as %s", addr, h.Addr)
	case h.ClusterName != n.cfg.ClusterName || h.ClusterID != n.cfg.ClusterID:
		return h, invalid("server %s belongs to cluster %s (%d)", addr, h.ClusterName, h.ClusterID)
	case zone != "" && h.Zone != zone:
		return h, invalid("server %s was started in zone '%s', not '%s'", addr, h.Zone, zone)
	case h.Joined:
		return h, notAllowed("server %s is already in a cluster", addr)
	}
	return h, nil
}

// addServer runs ALTER SYSTEM ADD SERVER 'addr' [ZONE 'z'].
func (n *Node) addServer(ctx context.Context, p *parser) (*result, *Error) {
	addr, zone, err := serverClause(p)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	exists := n.state.server(addr) != nil
	n.mu.Unlock()
	if exists {
		return nil, errorf(codeEntryExist, "server %s already exists", addr)
	}
	h, err := n.checkPeer(ctx, addr, zone)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if n.state.zone(h.Zone) == nil {
		n.mu.Unlock()
		return nil, missing("zone '%s' does not exist", h.Zone)
	}
	if n.state.server(addr) != nil {
		n.mu.Unlock()
		return nil, errorf(codeEntryExist, "server %s already exists", addr)
	}
	now := time.Now()
	sv := &Server{ID: n.state.nextID(), Addr: addr, SQLPort: n.cfg.SQLPort, Zone: h.Zone, Status: ServerActive,
		ProcessStart: h.ProcessStart, LastHeartbeat: now, BuildVersion: h.BuildVersion,
		ServeAt: ptrTime(now.Add(n.knobs.StartServiceDelay.Duration))}
	n.state.snapshotStatic(sv)
	n.state.Servers = append(n.state.Servers, sv)
	n.changed()
	snap := n.state.clone()
	n.mu.Unlock()
	if cerr := n.call(ctx, http.MethodPost, addr, pathJoin, snap, nil); cerr != nil {
		n.mu.Lock()
		n.state.Servers = slices.DeleteFunc(n.state.Servers, func(o *Server) bool { return o.Addr == addr })
		n.changed()
		n.mu.Unlock()
		return nil, errorf(codeRPC, "server %s did not join: %v", addr, cerr)
	}
	return &result{}, nil
}

// deleteServer runs ALTER SYSTEM DELETE SERVER: the server is DELETING
// until its units moved away (tick), then gone.
func (n *Node) deleteServer(p *parser) (*result, *Error) {
	addr, zone, err := serverClause(p)
	if err != nil {
		return nil, err
	}
	sv := n.state.server(addr)
	if sv == nil || (zone != "" && sv.Zone != zone) {
		return nil, missing("server %s does not exist", addr)
	}
	if sv.Status == ServerDeleting {
		return nil, notAllowed("server %s is already being deleted", addr)
	}
	if addr == n.cfg.Addr {
		return nil, notAllowed("server %s hosts the RootService", addr)
	}
	sv.Status = ServerDeleting
	return &result{}, nil
}

// setParameter runs ALTER SYSTEM SET name = value [ZONE|SERVER|TENANT = x].
func (n *Node) setParameter(sess session, p *parser) (*result, *Error) {
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	name = strings.ToLower(name)
	if isBackupParam(name) {
		p.punct('=')
		value, err := p.value()
		if err != nil {
			return nil, err
		}
		res, err, _ := n.onTenant(sess, p, func(t *Tenant) (*result, *Error) { return n.setBackupParam(t, name, value) })
		return res, err
	}
	spec, ok := paramSpecOf(name)
	if !ok {
		return nil, invalid("Invalid argument: unknown parameter '%s'", name)
	}
	p.punct('=')
	value, err := p.value()
	if err != nil {
		return nil, err
	}
	param := Param{Name: name, Value: value, Scope: "CLUSTER"}
	switch {
	case p.keywords("ZONE"):
		param.Scope = "ZONE"
	case p.keywords("SERVER"):
		param.Scope = "SERVER"
	case p.keywords("TENANT"):
		param.Scope = "TENANT"
	}
	if param.Scope != "CLUSTER" {
		p.punct('=')
		if param.Target, err = p.value(); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	s := n.state
	switch param.Scope {
	case "ZONE":
		if s.zone(param.Target) == nil {
			return nil, missing("zone '%s' does not exist", param.Target)
		}
	case "SERVER":
		if s.server(param.Target) == nil {
			return nil, missing("server %s does not exist", param.Target)
		}
	case "TENANT":
		t := s.tenantByName(param.Target)
		if t == nil {
			return nil, missing("Unknown tenant '%s'", param.Target)
		}
		param.Target = formatInt(t.ID)
	case "CLUSTER":
		if spec.scope == "TENANT" {
			// A tenant parameter set in sys without TENANT= applies to sys.
			param.Scope, param.Target = "TENANT", formatInt(n.tenantID(sess))
		}
	}
	if spec.scope == "CLUSTER" && param.Scope == "TENANT" {
		return nil, invalid("'%s' is a cluster parameter; it has no tenant scope", name)
	}
	s.setParam(param)
	return &result{}, nil
}

// createUser runs CREATE USER [IF NOT EXISTS] name [IDENTIFIED BY 'pw'].
func (n *Node) createUser(sess session, p *parser) (*result, *Error) {
	ifNotExists := p.keywords("IF", "NOT", "EXISTS")
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	password := ""
	if p.keywords("IDENTIFIED", "BY") {
		if password, err = p.value(); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	tid := n.tenantID(sess)
	if n.state.user(tid, name) != nil {
		if ifNotExists {
			return &result{}, nil
		}
		return nil, errorf(1396, "Operation CREATE USER failed for '%s'", name)
	}
	n.state.Users = append(n.state.Users, &User{TenantID: tid, Name: name, Password: password})
	return &result{}, nil
}

// majorityWithout reports whether every tenant keeps a majority of its
// locality's zones serving when zone stops.
func (s *State) majorityWithout(zone string) bool {
	for _, t := range s.Tenants {
		zones := localityZones(t.Locality)
		up := 0
		for _, z := range zones {
			if z != zone && s.zoneServing(z) {
				up++
			}
		}
		if len(zones) > 0 && up*2 <= len(zones) {
			return false
		}
	}
	return true
}

// zoneServing reports whether zone is active with an active server.
func (s *State) zoneServing(zone string) bool {
	z := s.zone(zone)
	if z == nil || z.Status != ZoneActive {
		return false
	}
	for _, sv := range s.serversIn(zone) {
		if sv.Status == ServerActive {
			return true
		}
	}
	return false
}

// poolIn returns the name of a pool that uses zone, or "".
func (s *State) poolIn(zone string) string {
	for _, p := range s.Pools {
		if slices.Contains(p.Zones, zone) {
			return p.Name
		}
	}
	return ""
}

// localityZones returns the zones of a locality such as
// "FULL{1}@z1, FULL{1}@z2".
func localityZones(locality string) []string {
	var out []string
	for _, part := range strings.Split(locality, ",") {
		if _, zone, ok := strings.Cut(strings.TrimSpace(part), "@"); ok {
			out = append(out, strings.TrimSpace(zone))
		}
	}
	return out
}

// tick advances the RootService's clock (n.mu held): servers without
// heartbeats go INACTIVE, joined servers start serving, units move off
// deleting servers, tenants finish creating and dropping, locality jobs
// finish.
func (n *Node) tick(now time.Time) {
	s := n.state
	lease := n.knobs.Lease.Duration
	if sv := s.server(n.cfg.Addr); sv != nil {
		n.heard(sv, n.start, n.knobs.BuildVersion, now)
	}
	for _, sv := range s.Servers {
		if sv.Status == ServerActive && now.Sub(sv.LastHeartbeat) > lease {
			sv.Status = ServerInactive
			n.log.Info("Server is inactive: no heartbeat for a lease", "peer", sv.Addr)
			n.changed()
		}
		if sv.StartService == nil && sv.ServeAt != nil && !now.Before(*sv.ServeAt) && sv.Status != ServerInactive {
			sv.StartService, sv.ServeAt = sv.ServeAt, nil
			n.changed()
		}
	}
	n.migrateUnits(now)
	for _, u := range s.Units {
		if u.GoneAt != nil && !now.Before(*u.GoneAt) {
			s.Units = slices.DeleteFunc(s.Units, func(o *Unit) bool { return o.GoneAt != nil && !now.Before(*o.GoneAt) })
			n.changed()
			break
		}
	}
	n.tickTenants(now)
	n.tickBackups(now)
}

// migrateUnits moves the units of deleting servers to another server of
// their zone, and removes a deleting server once it holds none.
func (n *Node) migrateUnits(now time.Time) {
	s := n.state
	var gone []string
	for _, sv := range s.Servers {
		if sv.Status != ServerDeleting || n.knobs.HangDelete {
			continue
		}
		for _, u := range s.unitsOn(sv.Addr) {
			switch {
			case u.MigrateFrom == sv.Addr && u.MovedAt != nil && !now.Before(*u.MovedAt):
				u.MigrateFrom, u.MovedAt = "", nil
				n.changed()
			case u.Server == sv.Addr && u.GoneAt == nil:
				if to := s.placeUnit(u.PoolID, u.Zone, sv.Addr); to != "" {
					u.Server, u.MigrateFrom = to, sv.Addr
					u.MovedAt = ptrTime(now.Add(n.knobs.MigrateDelay.Duration))
					n.changed()
				}
			}
		}
		if len(s.unitsOn(sv.Addr)) == 0 {
			gone = append(gone, sv.Addr)
		}
	}
	for _, addr := range gone {
		s.Servers = slices.DeleteFunc(s.Servers, func(o *Server) bool { return o.Addr == addr })
		n.log.Info("Server deleted", "peer", addr)
		n.changed()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = n.call(ctx, http.MethodPost, addr, pathLeave, nil, nil)
		}()
	}
}
