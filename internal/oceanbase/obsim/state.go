package obsim

import (
	"encoding/json"
	"strings"
	"time"
)

// State is one cluster's state, as the RootService holds it and pushes it
// to the members. Its JSON form is the simulator's own.
type State struct {
	ClusterName string `json:"clusterName"`
	ClusterID   int64  `json:"clusterID"`
	// Term counts RootService changes; a member follows the pushes of the
	// highest term it has seen.
	Term int64 `json:"term"`
	// Version counts changes; an election prefers the newest state.
	Version int64 `json:"version"`
	// RS is the RootService's server address (ip:rpcPort).
	RS string `json:"rs"`

	Servers     []*Server     `json:"servers"`
	Zones       []*Zone       `json:"zones"`
	Params      []*Param      `json:"params,omitempty"`
	Users       []*User       `json:"users"`
	UnitConfigs []*UnitConfig `json:"unitConfigs"`
	Pools       []*Pool       `json:"pools"`
	Units       []*Unit       `json:"units"`
	Tenants     []*Tenant     `json:"tenants"`
	Jobs        []*Job        `json:"jobs,omitempty"`
	Restores    []*RestoreJob `json:"restores,omitempty"`
	NextID      int64         `json:"nextID"`
}

// Server statuses (DBA_OB_SERVERS.STATUS).
const (
	ServerActive   = "ACTIVE"
	ServerInactive = "INACTIVE"
	ServerDeleting = "DELETING"
)

// Zone statuses (DBA_OB_ZONES.STATUS).
const (
	ZoneActive   = "ACTIVE"
	ZoneInactive = "INACTIVE"
)

// Tenant statuses (DBA_OB_TENANTS.STATUS).
const (
	TenantCreating = "CREATING"
	TenantNormal   = "NORMAL"
	TenantDropping = "DROPPING"
)

// Server is a row of DBA_OB_SERVERS.
type Server struct {
	ID      int64  `json:"id"`
	Addr    string `json:"addr"` // ip:rpcPort, the server's identity
	SQLPort int    `json:"sqlPort"`
	Zone    string `json:"zone"`
	Status  string `json:"status"`
	// StartService is start_service_time: nil (NULL) until the server
	// serves, set ServeAt after it joined or its process came back.
	StartService *time.Time `json:"startService,omitempty"`
	ServeAt      *time.Time `json:"serveAt,omitempty"`
	// ProcessStart is when the server's process started, as its last
	// heartbeat said: a change means the process restarted.
	ProcessStart  time.Time  `json:"processStart"`
	LastHeartbeat time.Time  `json:"lastHeartbeat"`
	StopTime      *time.Time `json:"stopTime,omitempty"`
	BuildVersion  string     `json:"buildVersion"`
	// Static holds the values of STATIC_EFFECTIVE parameters as of the
	// process's start.
	Static map[string]string `json:"static,omitempty"`
}

// Zone is a row of DBA_OB_ZONES.
type Zone struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Param is a value set with ALTER SYSTEM SET, at a scope: CLUSTER (Target
// empty), ZONE, SERVER (Target ip:port) or TENANT (Target the tenant id).
type Param struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Scope  string `json:"scope"`
	Target string `json:"target,omitempty"`
}

// User is a user of a tenant. The simulator keeps the password itself: it
// is a test double, and mysql_native_password needs it or its hash.
type User struct {
	TenantID int64  `json:"tenantID"`
	Name     string `json:"name"`
	Password string `json:"password"`
	Grants   string `json:"grants,omitempty"`
}

// UnitConfig is a row of DBA_OB_UNIT_CONFIGS.
type UnitConfig struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	MaxCPU  float64 `json:"maxCPU"`
	MinCPU  float64 `json:"minCPU"`
	Memory  int64   `json:"memory"`
	LogDisk int64   `json:"logDisk"`
}

// Pool is a row of DBA_OB_RESOURCE_POOLS.
type Pool struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	TenantID  int64    `json:"tenantID"` // 0: unbound (NULL)
	UnitCount int      `json:"unitCount"`
	ConfigID  int64    `json:"configID"`
	Zones     []string `json:"zones"`
}

// Unit is a row of DBA_OB_UNITS.
type Unit struct {
	ID     int64  `json:"id"`
	PoolID int64  `json:"poolID"`
	Zone   string `json:"zone"`
	Server string `json:"server"`
	// MigrateFrom is the server the unit is moving from, until MovedAt.
	MigrateFrom string     `json:"migrateFrom,omitempty"`
	MovedAt     *time.Time `json:"movedAt,omitempty"`
	Status      string     `json:"status"`
	GoneAt      *time.Time `json:"goneAt,omitempty"`
}

// Tenant is a row of DBA_OB_TENANTS.
type Tenant struct {
	ID               int64             `json:"id"`
	Name             string            `json:"name"`
	Type             string            `json:"type"` // SYS, USER, META
	PrimaryZone      string            `json:"primaryZone"`
	Locality         string            `json:"locality"`
	PreviousLocality string            `json:"previousLocality,omitempty"`
	Status           string            `json:"status"`
	Charset          string            `json:"charset"`
	DoneAt           *time.Time        `json:"doneAt,omitempty"` // when CREATING or DROPPING ends
	Variables        map[string]string `json:"variables,omitempty"`
	// Commits are a user tenant's committed transactions (data.go).
	Commits []Commit `json:"commits,omitempty"`
	// Backup is a user tenant's archive and backups (backup.go); nil
	// until one is configured.
	Backup *TenantBackup `json:"backup,omitempty"`
	// Role is the tenant's role (restore.go): PRIMARY when empty.
	Role string `json:"role,omitempty"`
	// RecoveryUntilSCN is where a restored tenant's recovery stopped.
	RecoveryUntilSCN int64 `json:"recoveryUntilSCN,omitempty"`
	// Source is a standby's LOG_RESTORE_SOURCE and replay (standby.go).
	Source *LogSource `json:"source,omitempty"`
}

// Job is a row of DBA_OB_TENANT_JOBS.
type Job struct {
	ID       int64      `json:"id"`
	Type     string     `json:"type"`
	Status   string     `json:"status"`
	TenantID int64      `json:"tenantID"`
	SQL      string     `json:"sql"`
	Start    time.Time  `json:"start"`
	End      *time.Time `json:"end,omitempty"`
	DoneAt   time.Time  `json:"doneAt"`
}

// Well-known ids and names of a bootstrapped cluster.
const (
	sysTenantID   = 1
	sysTenantName = "sys"
	sysPool       = "sys_pool"
	sysUnitConfig = "sys_unit_config"
)

func (s *State) nextID() int64 {
	s.NextID++
	return s.NextID
}

func (s *State) server(addr string) *Server {
	for _, sv := range s.Servers {
		if sv.Addr == addr {
			return sv
		}
	}
	return nil
}

func (s *State) zone(name string) *Zone {
	for _, z := range s.Zones {
		if z.Name == name {
			return z
		}
	}
	return nil
}

func (s *State) tenantByName(name string) *Tenant {
	for _, t := range s.Tenants {
		if strings.EqualFold(t.Name, name) {
			return t
		}
	}
	return nil
}

func (s *State) tenantByID(id int64) *Tenant {
	for _, t := range s.Tenants {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func (s *State) user(tenantID int64, name string) *User {
	for _, u := range s.Users {
		if u.TenantID == tenantID && strings.EqualFold(u.Name, name) {
			return u
		}
	}
	return nil
}

func (s *State) unitConfig(name string) *UnitConfig {
	for _, c := range s.UnitConfigs {
		if strings.EqualFold(c.Name, name) {
			return c
		}
	}
	return nil
}

func (s *State) unitConfigByID(id int64) *UnitConfig {
	for _, c := range s.UnitConfigs {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (s *State) pool(name string) *Pool {
	for _, p := range s.Pools {
		if strings.EqualFold(p.Name, name) {
			return p
		}
	}
	return nil
}

func (s *State) poolByID(id int64) *Pool {
	for _, p := range s.Pools {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// serversIn returns the servers of zone, in id order.
func (s *State) serversIn(zone string) []*Server {
	var out []*Server
	for _, sv := range s.Servers {
		if sv.Zone == zone {
			out = append(out, sv)
		}
	}
	return out
}

// unitsOn returns the units placed on addr or moving from it.
func (s *State) unitsOn(addr string) []*Unit {
	var out []*Unit
	for _, u := range s.Units {
		if u.Server == addr || u.MigrateFrom == addr {
			out = append(out, u)
		}
	}
	return out
}

// placeUnit picks a server of zone for a unit of pool: ACTIVE, not
// deleting, and holding no other unit of the pool. It returns "" when there
// is none.
func (s *State) placeUnit(pool int64, zone, exclude string) string {
	taken := map[string]bool{}
	for _, u := range s.Units {
		if u.PoolID == pool {
			taken[u.Server] = true
		}
	}
	var best string
	bestLoad := -1
	for _, sv := range s.serversIn(zone) {
		if sv.Status != ServerActive || taken[sv.Addr] || sv.Addr == exclude {
			continue
		}
		load := len(s.unitsOn(sv.Addr))
		if bestLoad < 0 || load < bestLoad {
			best, bestLoad = sv.Addr, load
		}
	}
	return best
}

// clone returns a deep copy of s through its JSON form.
func (s *State) clone() *State {
	var c State
	b, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		panic("obsim: cloning the state: " + err.Error())
	}
	return &c
}

// usersOf returns copies of a tenant's users.
func (s *State) usersOf(tenantID int64) []User {
	var out []User
	for _, u := range s.Users {
		if u.TenantID == tenantID {
			out = append(out, *u)
		}
	}
	return out
}
