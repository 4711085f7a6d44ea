package obsim

import (
	"strconv"
	"strings"
)

// A tenant's data version is its compatible parameter, as in OceanBase
// 4.x: a new tenant gets the version its observers run, a restored one the
// version of the backup it came from, and ALTER SYSTEM RUN UPGRADE JOB
// "UPGRADE_ALL" raises it to the observers' version. Simulated: the job is
// done when the statement returns (OceanBase's runs in the background and
// the tenant's compatible changes when it ends), and a restore of a backup
// newer than the observers is not refused.

// dataVersion is the version a build_version runs: up to its first "_".
func dataVersion(buildVersion string) string {
	v, _, _ := strings.Cut(buildVersion, "_")
	return v
}

// setDataVersion sets tenant id's compatible.
func (s *State) setDataVersion(id int64, version string) {
	s.setParam(Param{Name: "compatible", Value: version, Scope: "TENANT", Target: strconv.FormatInt(id, 10)})
}

// tenantDataVersion is tenant id's compatible.
func (s *State) tenantDataVersion(id int64) string {
	return s.configuredValue(&Server{}, "compatible", id, params["compatible"].def)
}

// runUpgradeJob runs ALTER SYSTEM RUN UPGRADE JOB '<job>' [TENANT = name]
// (n.mu held): for UPGRADE_ALL, each named tenant (every tenant without
// TENANT) takes the observers' version. Refused while the observers run
// more than one version, and for a standby (its data version comes with
// its primary's log).
func (n *Node) runUpgradeJob(p *parser) (*result, *Error) {
	job, err := p.value()
	if err != nil {
		return nil, err
	}
	var name string
	if p.keywords("TENANT") {
		p.punct('=')
		if name, err = p.value(); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if !strings.EqualFold(job, "UPGRADE_ALL") {
		return nil, invalid("Invalid argument: upgrade job '%s' (the simulator runs UPGRADE_ALL)", job)
	}
	s := n.state
	var version string
	for _, sv := range s.Servers {
		v := dataVersion(sv.BuildVersion)
		if version != "" && v != version {
			return nil, notAllowed("the observers run more than one version (%s, %s): run the upgrade job after every observer runs the new one", version, v)
		}
		version = v
	}
	tenants := s.Tenants
	if name != "" {
		t := s.tenantByName(name)
		if t == nil {
			return nil, missing("Unknown tenant '%s'", name)
		}
		tenants = []*Tenant{t}
	}
	for _, t := range tenants {
		if t.Type == "USER" && t.role() != RolePrimary {
			if name != "" {
				return nil, notAllowed("tenant '%s' is %s: a standby tenant's upgrade comes with its primary's log", t.Name, t.role())
			}
			continue
		}
		s.setDataVersion(t.ID, version)
	}
	return &result{}, nil
}
