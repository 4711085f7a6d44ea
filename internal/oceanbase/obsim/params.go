package obsim

import (
	"slices"
	"strconv"
	"strings"
)

// paramSpec describes a parameter the simulator knows. OceanBase rejects
// ALTER SYSTEM SET of a name it does not know, and so does the simulator.
type paramSpec struct {
	def      string
	dataType string // STRING, INT, BOOL, CAPACITY, TIME
	scope    string // CLUSTER or TENANT
	static   bool   // STATIC_EFFECTIVE: takes effect when the server restarts
}

// params is the subset of OceanBase 4.x's parameters the simulator models,
// with their defaults.
var params = map[string]paramSpec{
	"memory_limit":                          {"0M", "CAPACITY", "CLUSTER", false},
	"memory_limit_percentage":               {"80", "INT", "CLUSTER", false},
	"system_memory":                         {"0M", "CAPACITY", "CLUSTER", false},
	"cpu_count":                             {"0", "INT", "CLUSTER", true},
	"datafile_size":                         {"0M", "CAPACITY", "CLUSTER", false},
	"datafile_maxsize":                      {"0M", "CAPACITY", "CLUSTER", false},
	"datafile_next":                         {"0M", "CAPACITY", "CLUSTER", false},
	"log_disk_size":                         {"0M", "CAPACITY", "CLUSTER", false},
	"enable_syslog_recycle":                 {"False", "BOOL", "CLUSTER", false},
	"max_syslog_file_count":                 {"0", "INT", "CLUSTER", false},
	"syslog_level":                          {"WDIAG", "STRING", "CLUSTER", false},
	"server_permanent_offline_time":         {"3600s", "TIME", "CLUSTER", false},
	"enable_rebalance":                      {"True", "BOOL", "TENANT", false},
	"enable_rereplication":                  {"True", "BOOL", "CLUSTER", false},
	"__min_full_resource_pool_memory":       {"5368709120", "INT", "CLUSTER", false},
	"enable_sql_audit":                      {"True", "BOOL", "CLUSTER", false},
	"cluster":                               {"obcluster", "STRING", "CLUSTER", true},
	"cluster_id":                            {"1", "INT", "CLUSTER", true},
	"compatible":                            {"4.3.5.1", "STRING", "TENANT", false},
	"major_freeze_duty_time":                {"02:00", "TIME", "TENANT", false},
	"freeze_trigger_percentage":             {"20", "INT", "TENANT", false},
	"writing_throttling_trigger_percentage": {"60", "INT", "TENANT", false},
	"net_thread_count":                      {"0", "INT", "CLUSTER", true},
	"rpc_port":                              {"2882", "INT", "CLUSTER", true},
	"mysql_port":                            {"2881", "INT", "CLUSTER", true},
}

func paramSpecOf(name string) (paramSpec, bool) {
	p, ok := params[strings.ToLower(name)]
	return p, ok
}

// paramValue resolves name's value on server sv (for tenant tenantID when
// the parameter is a tenant's): the most specific setting wins, as in
// OceanBase, and a STATIC_EFFECTIVE value is the one the process started
// with.
func (s *State) paramValue(sv *Server, name string, tenantID int64) string {
	spec, _ := paramSpecOf(name)
	if spec.static {
		if v, ok := sv.Static[name]; ok {
			return v
		}
	}
	return s.configuredValue(sv, name, tenantID, spec.def)
}

func (s *State) configuredValue(sv *Server, name string, tenantID int64, def string) string {
	rank := -1
	value := def
	for _, p := range s.Params {
		if p.Name != name {
			continue
		}
		r := -1
		switch p.Scope {
		case "CLUSTER":
			r = 0
		case "ZONE":
			if p.Target == sv.Zone {
				r = 1
			}
		case "SERVER":
			if p.Target == sv.Addr {
				r = 2
			}
		case "TENANT":
			if p.Target == strconv.FormatInt(tenantID, 10) {
				r = 3
			}
		}
		if r > rank {
			rank, value = r, p.Value
		}
	}
	return value
}

// snapshotStatic records the STATIC_EFFECTIVE values a (re)started server
// runs with.
func (s *State) snapshotStatic(sv *Server) {
	sv.Static = map[string]string{}
	for name, spec := range params {
		if spec.static {
			sv.Static[name] = s.configuredValue(sv, name, 0, spec.def)
		}
	}
}

// setParam records an ALTER SYSTEM SET, replacing the same name at the same
// scope and target.
func (s *State) setParam(p Param) {
	s.Params = slices.DeleteFunc(s.Params, func(o *Param) bool {
		return o.Name == p.Name && o.Scope == p.Scope && o.Target == p.Target
	})
	s.Params = append(s.Params, &p)
}
