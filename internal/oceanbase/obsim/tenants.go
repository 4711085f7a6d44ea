package obsim

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// parseSize reads a capacity as OceanBase writes it: bytes, or a number
// with K, M, G or T (optionally followed by B).
func parseSize(s string) (int64, *Error) {
	u := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(u, "K"):
		mult = 1 << 10
	case strings.HasSuffix(u, "M"):
		mult = 1 << 20
	case strings.HasSuffix(u, "G"):
		mult = 1 << 30
	case strings.HasSuffix(u, "T"):
		mult = 1 << 40
	}
	if mult > 1 {
		u = u[:len(u)-1]
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || f < 0 {
		return 0, invalid("Invalid argument: '%s' is not a capacity", s)
	}
	return int64(f * float64(mult)), nil
}

func one(opts map[string][]string, key string) (string, bool) {
	v, ok := opts[key]
	if !ok || len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// createTenant runs CREATE TENANT [IF NOT EXISTS] name
// RESOURCE_POOL_LIST=(...) [, PRIMARY_ZONE=..., LOCALITY=..., CHARSET=...]
// [SET VARIABLES ...], or CREATE STANDBY TENANT with LOG_RESTORE_SOURCE
// among the options (standby.go). Like OceanBase it returns when the tenant
// is NORMAL.
func (n *Node) createTenant(ctx context.Context, p *parser, standby bool) (*result, *Error) {
	ifNotExists := p.keywords("IF", "NOT", "EXISTS")
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	opts, err := p.options("SET")
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	if p.keywords("SET") {
		p.keywords("VARIABLES")
		more, err := p.options()
		if err != nil {
			return nil, err
		}
		for k, v := range more {
			vars[strings.ToLower(k)] = strings.Join(v, ",")
		}
	}
	n.mu.Lock()
	s := n.state
	if t := s.tenantByName(name); t != nil {
		n.mu.Unlock()
		if ifNotExists {
			return &result{}, nil
		}
		return nil, errorf(5157, "tenant '%s' already exists", name)
	}
	source, _ := one(opts, "LOG_RESTORE_SOURCE")
	if standby {
		// Checked before the tenant exists: a refused CREATE leaves nothing.
		if _, _, _, err := logSourceDSN(source); err != nil {
			n.mu.Unlock()
			return nil, invalid("Invalid argument: %v", err)
		}
	}
	primary, _ := one(opts, "PRIMARY_ZONE")
	charset, ok := one(opts, "CHARSET")
	if !ok {
		charset = "utf8mb4"
	}
	t, err := n.addTenant(name, opts["RESOURCE_POOL_LIST"], strings.Join(opts["LOCALITY"], ","), primary, charset)
	if err != nil {
		n.mu.Unlock()
		return nil, err
	}
	t.Variables = vars
	if standby {
		t.Role = RoleStandby
		t.Source = &LogSource{Value: source, UntilSCN: maxSCN}
		t.RecoveryUntilSCN = maxSCN
	}
	delay := n.knobs.TenantDelay.Duration
	n.mu.Unlock()
	select {
	case <-time.After(delay + 200*time.Millisecond):
	case <-ctx.Done():
	}
	return &result{}, nil
}

// addTenant adds a user tenant (and its META tenant) on pools, CREATING
// for TenantDelay (n.mu held).
func (n *Node) addTenant(name string, pools []string, locality, primary, charset string) (*Tenant, *Error) {
	s := n.state
	if len(pools) == 0 {
		return nil, invalid("CREATE TENANT needs RESOURCE_POOL_LIST")
	}
	minMemory, _ := parseSize(s.configuredValue(&Server{}, "__min_full_resource_pool_memory", 0,
		params["__min_full_resource_pool_memory"].def))
	var zones []string
	for _, pn := range pools {
		pool := s.pool(pn)
		switch {
		case pool == nil:
			return nil, missing("resource pool '%s' does not exist", pn)
		case pool.TenantID != 0:
			return nil, notAllowed("resource pool '%s' is already used by a tenant", pn)
		}
		if c := s.unitConfigByID(pool.ConfigID); c != nil && c.Memory < minMemory {
			return nil, invalid("unit config '%s' has memory_size %d below __min_full_resource_pool_memory %d",
				c.Name, c.Memory, minMemory)
		}
		zones = append(zones, pool.Zones...)
	}
	locality = normalizeLocality(locality)
	if locality == "" {
		var parts []string
		for _, z := range zones {
			parts = append(parts, "FULL{1}@"+z)
		}
		locality = strings.Join(parts, ", ")
	}
	for _, z := range localityZones(locality) {
		if !slices.Contains(zones, z) {
			return nil, invalid("locality zone '%s' has no resource pool", z)
		}
	}
	id := int64(1002)
	for s.tenantByID(id) != nil {
		id += 2
	}
	if primary == "" {
		primary = "RANDOM"
	}
	delay := n.knobs.TenantDelay.Duration
	t := &Tenant{ID: id, Name: name, Type: "USER", PrimaryZone: primary, Locality: locality, Status: TenantCreating,
		Charset: charset, DoneAt: ptrTime(time.Now().Add(delay))}
	meta := &Tenant{ID: id - 1, Name: "META$" + formatInt(id), Type: "META", PrimaryZone: primary, Locality: locality,
		Status: TenantCreating, Charset: charset, DoneAt: t.DoneAt}
	s.Tenants = append(s.Tenants, meta, t)
	for _, pn := range pools {
		s.pool(pn).TenantID = id
	}
	s.Users = append(s.Users, &User{TenantID: id, Name: "root"})
	s.setDataVersion(id, dataVersion(n.knobs.BuildVersion))
	n.changed()
	return t, nil
}

// mutateResources runs the unit, pool and tenant statements (n.mu held).
func (n *Node) mutateResources(p *parser, now time.Time) (*result, *Error) {
	s := n.state
	switch {
	case p.keywords("CREATE", "RESOURCE", "UNIT"):
		ifNotExists := p.keywords("IF", "NOT", "EXISTS")
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		c := &UnitConfig{Name: name}
		if err := unitOptions(p, c); err != nil {
			return nil, err
		}
		if s.unitConfig(name) != nil {
			if ifNotExists {
				return &result{}, nil // OceanBase keeps the existing one unchanged (ob-operator #177)
			}
			return nil, errorf(codeEntryExist, "resource unit '%s' already exists", name)
		}
		if c.MaxCPU <= 0 || c.Memory <= 0 {
			return nil, invalid("resource unit '%s' needs MAX_CPU and MEMORY_SIZE", name)
		}
		c.ID = s.nextID()
		s.UnitConfigs = append(s.UnitConfigs, c)
		return &result{}, nil
	case p.keywords("ALTER", "RESOURCE", "UNIT"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		c := s.unitConfig(name)
		if c == nil {
			return nil, missing("resource unit '%s' does not exist", name)
		}
		return &result{}, unitOptions(p, c)
	case p.keywords("DROP", "RESOURCE", "UNIT"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		c := s.unitConfig(name)
		if c == nil {
			return nil, missing("resource unit '%s' does not exist", name)
		}
		for _, pool := range s.Pools {
			if pool.ConfigID == c.ID {
				return nil, notAllowed("resource unit '%s' is used by pool '%s'", name, pool.Name)
			}
		}
		s.UnitConfigs = slices.DeleteFunc(s.UnitConfigs, func(o *UnitConfig) bool { return o == c })
		return &result{}, nil
	case p.keywords("CREATE", "RESOURCE", "POOL"):
		return n.createPool(p)
	case p.keywords("ALTER", "RESOURCE", "POOL"):
		return n.alterPool(p)
	case p.keywords("DROP", "RESOURCE", "POOL"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		pool := s.pool(name)
		if pool == nil {
			return nil, missing("resource pool '%s' does not exist", name)
		}
		if pool.TenantID != 0 {
			return nil, notAllowed("resource pool '%s' is used by a tenant", name)
		}
		s.Pools = slices.DeleteFunc(s.Pools, func(o *Pool) bool { return o == pool })
		s.Units = slices.DeleteFunc(s.Units, func(u *Unit) bool { return u.PoolID == pool.ID })
		return &result{}, nil
	case p.keywords("ALTER", "RESOURCE", "TENANT"):
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		opts, err := p.options()
		if err != nil {
			return nil, err
		}
		t := s.tenantByName(name)
		v, ok := one(opts, "UNIT_NUM")
		if t == nil || !ok {
			return nil, invalid("ALTER RESOURCE TENANT needs a tenant and UNIT_NUM")
		}
		num, cerr := strconv.Atoi(v)
		if cerr != nil || num < 1 {
			return nil, invalid("UNIT_NUM must be a positive number")
		}
		for _, pool := range s.Pools {
			if pool.TenantID == t.ID {
				if err := n.setUnitNum(pool, num, now); err != nil {
					return nil, err
				}
			}
		}
		return &result{}, nil
	case p.keywords("ALTER", "TENANT"):
		return n.alterTenant(p, now)
	case p.keywords("DROP", "TENANT"):
		ifExists := p.keywords("IF", "EXISTS")
		name, err := p.value()
		if err != nil {
			return nil, err
		}
		p.keywords("FORCE")
		t := s.tenantByName(name)
		if t == nil || t.Type != "USER" {
			if ifExists {
				return &result{}, nil
			}
			return nil, missing("Unknown tenant '%s'", name)
		}
		for _, x := range []*Tenant{t, s.tenantByID(t.ID - 1)} {
			if x != nil && x.Status != TenantDropping {
				x.Status, x.DoneAt = TenantDropping, ptrTime(now.Add(n.knobs.TenantDelay.Duration))
			}
		}
		return &result{}, nil
	}
	return nil, errorf(codeSyntax, "the simulator does not know this statement: %s", p.q)
}

func unitOptions(p *parser, c *UnitConfig) *Error {
	opts, err := p.options()
	if err != nil {
		return err
	}
	for k, v := range opts {
		if len(v) != 1 {
			return invalid("%s takes one value", k)
		}
		switch k {
		case "MAX_CPU", "MIN_CPU":
			f, perr := strconv.ParseFloat(v[0], 64)
			if perr != nil || f <= 0 {
				return invalid("%s must be a positive number", k)
			}
			if k == "MAX_CPU" {
				c.MaxCPU = f
			} else {
				c.MinCPU = f
			}
		case "MEMORY_SIZE", "LOG_DISK_SIZE":
			size, err := parseSize(v[0])
			if err != nil {
				return err
			}
			if k == "MEMORY_SIZE" {
				c.Memory = size
			} else {
				c.LogDisk = size
			}
		case "MAX_IOPS", "MIN_IOPS", "IOPS_WEIGHT":
		default:
			return invalid("unknown resource unit option %s", k)
		}
	}
	if c.MinCPU == 0 || c.MinCPU > c.MaxCPU {
		c.MinCPU = c.MaxCPU
	}
	return nil
}

func (n *Node) createPool(p *parser) (*result, *Error) {
	s := n.state
	ifNotExists := p.keywords("IF", "NOT", "EXISTS")
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	opts, err := p.options()
	if err != nil {
		return nil, err
	}
	if s.pool(name) != nil {
		if ifNotExists {
			return &result{}, nil
		}
		return nil, errorf(codeEntryExist, "resource pool '%s' already exists", name)
	}
	unit, _ := one(opts, "UNIT")
	c := s.unitConfig(unit)
	if c == nil {
		return nil, missing("resource unit '%s' does not exist", unit)
	}
	num := 1
	if v, ok := one(opts, "UNIT_NUM"); ok {
		if num, _ = strconv.Atoi(v); num < 1 {
			return nil, invalid("UNIT_NUM must be a positive number")
		}
	}
	zones := opts["ZONE_LIST"]
	if len(zones) == 0 {
		return nil, invalid("CREATE RESOURCE POOL needs ZONE_LIST")
	}
	pool := &Pool{ID: s.nextID(), Name: name, UnitCount: num, ConfigID: c.ID, Zones: zones}
	for _, z := range zones {
		if s.zone(z) == nil {
			return nil, missing("zone '%s' does not exist", z)
		}
	}
	s.Pools = append(s.Pools, pool)
	for _, z := range zones {
		if err := n.addUnits(pool, z, num); err != nil {
			s.Pools = slices.DeleteFunc(s.Pools, func(o *Pool) bool { return o == pool })
			s.Units = slices.DeleteFunc(s.Units, func(u *Unit) bool { return u.PoolID == pool.ID })
			return nil, err
		}
	}
	return &result{}, nil
}

// addUnits places count more units of pool in zone, each on its own server.
func (n *Node) addUnits(pool *Pool, zone string, count int) *Error {
	for range count {
		to := n.state.placeUnit(pool.ID, zone, "")
		if to == "" {
			return errorf(codeNoResource, "zone '%s' has not enough active servers for %d units of pool '%s'",
				zone, pool.UnitCount, pool.Name)
		}
		n.state.Units = append(n.state.Units, &Unit{ID: n.state.nextID(), PoolID: pool.ID, Zone: zone, Server: to,
			Status: "ACTIVE"})
	}
	return nil
}

func (n *Node) setUnitNum(pool *Pool, num int, now time.Time) *Error {
	for _, z := range pool.Zones {
		var live []*Unit
		for _, u := range n.state.Units {
			if u.PoolID == pool.ID && u.Zone == z && u.GoneAt == nil {
				live = append(live, u)
			}
		}
		if num > len(live) {
			if err := n.addUnits(pool, z, num-len(live)); err != nil {
				return err
			}
		}
		for _, u := range live[min(num, len(live)):] {
			u.Status, u.GoneAt = "DELETING", ptrTime(now.Add(n.knobs.MigrateDelay.Duration))
		}
	}
	pool.UnitCount = num
	return nil
}

// alterPool runs ALTER RESOURCE POOL name ZONE_LIST=(...) | UNIT_NUM=n |
// UNIT='cfg'.
func (n *Node) alterPool(p *parser) (*result, *Error) {
	s := n.state
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	opts, err := p.options()
	if err != nil {
		return nil, err
	}
	pool := s.pool(name)
	if pool == nil {
		return nil, missing("resource pool '%s' does not exist", name)
	}
	if zones, ok := opts["ZONE_LIST"]; ok {
		if t := s.tenantByID(pool.TenantID); t != nil {
			for _, z := range localityZones(t.Locality) {
				if !slices.Contains(zones, z) {
					return nil, notAllowed("zone '%s' is in tenant '%s''s locality; change the locality first", z, t.Name)
				}
			}
		}
		for _, z := range zones {
			if s.zone(z) == nil {
				return nil, missing("zone '%s' does not exist", z)
			}
			if !slices.Contains(pool.Zones, z) {
				if err := n.addUnits(pool, z, pool.UnitCount); err != nil {
					return nil, err
				}
			}
		}
		for _, z := range pool.Zones {
			if !slices.Contains(zones, z) {
				s.Units = slices.DeleteFunc(s.Units, func(u *Unit) bool { return u.PoolID == pool.ID && u.Zone == z })
			}
		}
		pool.Zones = zones
	}
	if v, ok := one(opts, "UNIT"); ok {
		c := s.unitConfig(v)
		if c == nil {
			return nil, missing("resource unit '%s' does not exist", v)
		}
		pool.ConfigID = c.ID
	}
	return &result{}, nil
}

// alterTenant runs ALTER TENANT name [SET] LOCALITY=... | PRIMARY_ZONE=... |
// RESOURCE_POOL_LIST=(...) | CHARSET=..., and ALTER TENANT name [SET]
// VARIABLES ....
func (n *Node) alterTenant(p *parser, now time.Time) (*result, *Error) {
	s := n.state
	name, err := p.value()
	if err != nil {
		return nil, err
	}
	p.keywords("SET")
	t := s.tenantByName(name)
	if t == nil {
		return nil, missing("Unknown tenant '%s'", name)
	}
	if p.keywords("VARIABLES") {
		opts, err := p.options()
		if err != nil {
			return nil, err
		}
		if t.Variables == nil {
			t.Variables = map[string]string{}
		}
		for k, v := range opts {
			t.Variables[strings.ToLower(k)] = strings.Join(v, ",")
		}
		return &result{}, nil
	}
	opts, err := p.options()
	if err != nil {
		return nil, err
	}
	if t.Status != TenantNormal {
		return nil, notAllowed("tenant '%s' is %s", name, t.Status)
	}
	if pools, ok := opts["RESOURCE_POOL_LIST"]; ok {
		for _, pool := range s.Pools {
			if pool.TenantID == t.ID && !slices.Contains(pools, pool.Name) {
				pool.TenantID = 0
			}
		}
		for _, pn := range pools {
			pool := s.pool(pn)
			if pool == nil {
				return nil, missing("resource pool '%s' does not exist", pn)
			}
			pool.TenantID = t.ID
		}
	}
	if v, ok := one(opts, "PRIMARY_ZONE"); ok {
		t.PrimaryZone = v
	}
	if v, ok := one(opts, "CHARSET"); ok {
		t.Charset = v
	}
	if v, ok := opts["LOCALITY"]; ok {
		return &result{}, n.changeLocality(t, normalizeLocality(strings.Join(v, ",")), p.q, now)
	}
	return &result{}, nil
}

// changeLocality starts a locality change: one zone added or removed per
// change, one change at a time, as OceanBase allows; it finishes as a job.
func (n *Node) changeLocality(t *Tenant, locality, sql string, now time.Time) *Error {
	s := n.state
	for _, j := range s.Jobs {
		if j.TenantID == t.ID && j.Status == "INPROGRESS" {
			return notAllowed("tenant '%s' has a locality change in progress", t.Name)
		}
	}
	old, nw := localityZones(t.Locality), localityZones(locality)
	diff := 0
	for _, z := range old {
		if !slices.Contains(nw, z) {
			diff++
		}
	}
	for _, z := range nw {
		if !slices.Contains(old, z) {
			diff++
		}
	}
	if diff == 0 {
		return nil
	}
	if diff > 1 {
		return notAllowed("a locality change may add or remove one zone at a time (%s → %s)", t.Locality, locality)
	}
	var poolZones []string
	for _, pool := range s.Pools {
		if pool.TenantID == t.ID {
			poolZones = append(poolZones, pool.Zones...)
		}
	}
	for _, z := range nw {
		if !slices.Contains(poolZones, z) {
			return invalid("locality zone '%s' has no resource pool of tenant '%s'", z, t.Name)
		}
	}
	t.PreviousLocality, t.Locality = t.Locality, locality
	s.Jobs = append(s.Jobs, &Job{ID: s.nextID(), Type: "ALTER_TENANT_LOCALITY", Status: "INPROGRESS", TenantID: t.ID,
		SQL: sql, Start: now, DoneAt: now.Add(n.knobs.TenantDelay.Duration)})
	return nil
}

// normalizeLocality writes a locality as OceanBase shows it:
// "FULL{1}@z1, FULL{1}@z2".
func normalizeLocality(l string) string {
	var parts []string
	for _, part := range strings.Split(l, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		typ, zone, ok := strings.Cut(part, "@")
		if !ok {
			return l
		}
		typ = strings.ToUpper(strings.TrimSpace(typ))
		switch typ {
		case "F", "FULL":
			typ = "FULL{1}"
		case "R", "READONLY":
			typ = "READONLY{1}"
		}
		parts = append(parts, typ+"@"+strings.TrimSpace(zone))
	}
	return strings.Join(parts, ", ")
}

// tickTenants finishes tenant creations, drops and locality jobs.
func (n *Node) tickTenants(now time.Time) {
	s := n.state
	for _, t := range s.Tenants {
		if t.DoneAt == nil || now.Before(*t.DoneAt) {
			continue
		}
		t.DoneAt = nil
		switch t.Status {
		case TenantCreating:
			t.Status = TenantNormal
		case TenantDropping:
			id := t.ID
			s.Tenants = slices.DeleteFunc(s.Tenants, func(o *Tenant) bool { return o.ID == id })
			s.Users = slices.DeleteFunc(s.Users, func(u *User) bool { return u.TenantID == id })
			for _, pool := range s.Pools {
				if pool.TenantID == id {
					pool.TenantID = 0
				}
			}
		}
		n.changed()
		return // the slice may have changed
	}
	sysChanged := false
	for _, j := range s.Jobs {
		if j.Status == "INPROGRESS" && !now.Before(j.DoneAt) {
			j.Status, j.End = "SUCCESS", ptrTime(now)
			if t := s.tenantByID(j.TenantID); t != nil {
				t.PreviousLocality = ""
			}
			sysChanged = sysChanged || j.TenantID == sysTenantID
			n.changed()
		}
	}
	if sysChanged {
		n.handOverRootService(now)
	}
}

// handOverRootService moves the RootService off this server once the sys
// tenant's locality no longer has its zone (n.mu held): the RootService
// runs where the leader of the sys tenant's log stream is, and the zone
// has no replica of it any more. It goes, with a new term, to the serving
// server of the locality's zones with the lowest address; the new state is
// pushed to it, and should that push fail the members elect a RootService
// as when one is lost.
func (n *Node) handOverRootService(now time.Time) {
	s := n.state
	sys, self := s.tenantByID(sysTenantID), s.server(n.cfg.Addr)
	if sys == nil || self == nil || slices.Contains(localityZones(sys.Locality), self.Zone) {
		return
	}
	to := ""
	for _, sv := range s.Servers {
		serving := sv.Status == ServerActive && sv.StartService != nil
		if serving && slices.Contains(localityZones(sys.Locality), sv.Zone) && (to == "" || sv.Addr < to) {
			to = sv.Addr
		}
	}
	if to == "" {
		return
	}
	s.Term++
	s.RS = to
	n.isRS = false
	n.lastRS = now // a lease before this node would call an election
	n.changed()
	snap := s.clone()
	n.log.Info("Handed the RootService over: the sys tenant left this zone", "to", to, "term", s.Term)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = n.call(ctx, http.MethodPost, to, pathState, snap, nil)
	}()
}
