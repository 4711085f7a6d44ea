package obsim

import (
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// view returns the rows of one of OceanBase's views (upper-case name) as
// session sees them: the sys tenant sees every tenant's rows; a user tenant
// sees its own.
func (s *State) view(name string, tenantID int64) (table, *Error) {
	switch name {
	case "DBA_OB_SERVERS", "__ALL_SERVER":
		return s.serversView(), nil
	case "DBA_OB_ZONES":
		t := table{cols: []string{"zone", "status", "idc", "region", "type"}}
		for _, z := range s.Zones {
			t.rows = append(t.rows, []any{z.Name, z.Status, "", "sys_region", "ReadWrite"})
		}
		return t, nil
	case "GV$OB_PARAMETERS":
		return s.parametersView(tenantID), nil
	case "CDB_OB_SYS_VARIABLES":
		// Sys only; the variables a tenant was created with or had set
		// (the simulator keeps no others).
		if tenantID != sysTenantID {
			break
		}
		t := table{cols: []string{"tenant_id", "zone", "name", "data_type", "value", "info", "flags", "min_val", "max_val"}}
		for _, tn := range s.Tenants {
			for _, k := range slices.Sorted(maps.Keys(tn.Variables)) {
				t.rows = append(t.rows, []any{tn.ID, "", k, int64(22), tn.Variables[k], "", int64(1), "", ""})
			}
		}
		return t, nil
	case "DBA_OB_TENANTS":
		t := table{cols: []string{"tenant_id", "tenant_name", "tenant_type", "primary_zone", "locality",
			"previous_locality", "status", "compatibility_mode", "tenant_role", "log_mode", "switchover_status",
			"recovery_until_scn", "sync_scn", "replayable_scn", "readable_scn", "switchover_epoch"}}
		for _, tn := range s.Tenants {
			if tenantID != sysTenantID && tn.ID != tenantID {
				continue
			}
			var prev any
			if tn.PreviousLocality != "" {
				prev = tn.PreviousLocality
			}
			logMode := "NOARCHIVELOG"
			if tn.Backup != nil {
				logMode = tn.Backup.LogMode
			}
			t.rows = append(t.rows, []any{tn.ID, tn.Name, tn.Type, tn.PrimaryZone, tn.Locality, prev, tn.Status,
				"MYSQL", tn.role(), logMode, "NORMAL", recoveryUntil(tn), syncSCN(tn), syncSCN(tn), syncSCN(tn), int64(0)})
		}
		return t, nil
	case "DBA_OB_RESOURCE_POOLS":
		t := table{cols: []string{"resource_pool_id", "name", "tenant_id", "unit_count", "unit_config_id",
			"zone_list", "replica_type"}}
		for _, p := range s.Pools {
			var tid any
			if p.TenantID != 0 {
				tid = p.TenantID
			}
			t.rows = append(t.rows, []any{p.ID, p.Name, tid, int64(p.UnitCount), p.ConfigID,
				strings.Join(p.Zones, ";"), "FULL"})
		}
		return t, nil
	case "DBA_OB_UNITS":
		return s.unitsView(), nil
	case "DBA_OB_UNIT_CONFIGS":
		t := table{cols: []string{"unit_config_id", "name", "max_cpu", "min_cpu", "memory_size", "log_disk_size"}}
		for _, c := range s.UnitConfigs {
			t.rows = append(t.rows, []any{c.ID, c.Name, c.MaxCPU, c.MinCPU, c.Memory, c.LogDisk})
		}
		return t, nil
	case "DBA_OB_TENANT_JOBS":
		t := table{cols: []string{"job_id", "job_type", "job_status", "tenant_id", "sql_text", "start_time",
			"modify_time"}}
		for _, j := range s.Jobs {
			if tenantID != sysTenantID && j.TenantID != tenantID {
				continue
			}
			var end any
			if j.End != nil {
				end = *j.End
			}
			t.rows = append(t.rows, []any{j.ID, j.Type, j.Status, j.TenantID, j.SQL, j.Start, end})
		}
		return t, nil
	}
	if t, ok := s.backupView(name, tenantID); ok {
		return t, nil
	}
	if t, ok := s.restoreView(name, tenantID); ok {
		return t, nil
	}
	if t, ok := s.sourceView(name, tenantID); ok {
		return t, nil
	}
	if t, ok := s.logSourceView(name, tenantID); ok {
		return t, nil
	}
	return table{}, errorf(1146, "Table 'oceanbase.%s' doesn't exist", name)
}

func (s *State) serversView() table {
	t := table{cols: []string{"svr_ip", "svr_port", "id", "zone", "sql_port", "with_rootserver", "status",
		"start_service_time", "stop_time", "build_version", "with_partition", "inner_port"}}
	for _, sv := range s.Servers {
		ip, port := splitAddr(sv.Addr)
		rs := "NO"
		if sv.Addr == s.RS {
			rs = "YES"
		}
		var start, stop any
		if sv.StartService != nil {
			start = *sv.StartService
		}
		if sv.StopTime != nil {
			stop = *sv.StopTime
		}
		t.rows = append(t.rows, []any{ip, port, sv.ID, sv.Zone, int64(sv.SQLPort), rs, sv.Status, start, stop,
			sv.BuildVersion, int64(1), int64(sv.SQLPort)})
	}
	return t
}

func (s *State) unitsView() table {
	t := table{cols: []string{"unit_id", "tenant_id", "status", "resource_pool_id", "unit_group_id", "zone",
		"svr_ip", "svr_port", "migrate_from_svr_ip", "migrate_from_svr_port", "unit_config_id"}}
	for _, u := range s.Units {
		p := s.poolByID(u.PoolID)
		var tid, cfg any
		if p != nil {
			cfg = p.ConfigID
			if p.TenantID != 0 {
				tid = p.TenantID
			}
		}
		ip, port := splitAddr(u.Server)
		var fromIP, fromPort any
		if u.MigrateFrom != "" {
			fi, fp := splitAddr(u.MigrateFrom)
			fromIP, fromPort = fi, fp
		}
		t.rows = append(t.rows, []any{u.ID, tid, u.Status, u.PoolID, int64(0), u.Zone, ip, port, fromIP, fromPort, cfg})
	}
	return t
}

// parametersView is GV$OB_PARAMETERS: one row per server for a cluster
// parameter (TENANT_ID NULL), one per server and tenant for a tenant's.
func (s *State) parametersView(tenantID int64) table {
	t := table{cols: []string{"svr_ip", "svr_port", "zone", "scope", "tenant_id", "name", "data_type", "value",
		"edit_level"}}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, sv := range s.Servers {
		ip, port := splitAddr(sv.Addr)
		for _, n := range names {
			spec := params[n]
			level := "DYNAMIC_EFFECTIVE"
			if spec.static {
				level = "STATIC_EFFECTIVE"
			}
			if spec.scope == "CLUSTER" {
				if tenantID == sysTenantID {
					t.rows = append(t.rows, []any{ip, port, sv.Zone, "CLUSTER", nil, n, spec.dataType,
						s.paramValue(sv, n, 0), level})
				}
				continue
			}
			for _, tn := range s.Tenants {
				if tn.Status == TenantNormal && (tenantID == sysTenantID || tn.ID == tenantID) {
					t.rows = append(t.rows, []any{ip, port, sv.Zone, "TENANT", tn.ID, n, spec.dataType,
						s.paramValue(sv, n, tn.ID), level})
				}
			}
		}
	}
	return t
}

// splitAddr splits "ip:port" into the ip and the port as a number.
func splitAddr(addr string) (string, any) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, nil
	}
	n, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		return host, nil
	}
	return host, n
}

func ptrTime(t time.Time) *time.Time { return &t }

// recoveryUntil is DBA_OB_TENANTS.RECOVERY_UNTIL_SCN: where a restored
// tenant's recovery stopped, OceanBase's maximum SCN for a primary.
func recoveryUntil(t *Tenant) int64 {
	if t.RecoveryUntilSCN != 0 {
		return t.RecoveryUntilSCN
	}
	return maxSCN
}

// syncSCN is DBA_OB_TENANTS.SYNC_SCN (and the replayable and readable
// SCNs): a standby's replay point, a primary's current SCN.
func syncSCN(t *Tenant) int64 {
	if t.Source != nil {
		return t.Source.SyncSCN
	}
	return time.Now().UnixNano()
}
