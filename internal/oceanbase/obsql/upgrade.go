package obsql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// DataVersion is the version a build_version runs ("4.3.5.2_1020...(...)"
// runs 4.3.5.2): what a tenant's data version (its compatible parameter)
// is upgraded to.
func DataVersion(buildVersion string) string {
	v, _, _ := strings.Cut(buildVersion, "_")
	return strings.TrimSpace(v)
}

// CompareVersions compares two dotted versions number by number ("4.3.10"
// is after "4.3.9"): -1, 0 or 1.
func CompareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// ServersVersion returns the version every observer of DBA_OB_SERVERS
// runs, or an error naming them when they run more than one (a cluster
// upgrade has not finished).
func ServersVersion(servers []Server) (string, error) {
	var version string
	for _, s := range servers {
		v := DataVersion(s.BuildVersion)
		switch {
		case v == "":
			return "", fmt.Errorf("the observer %s reports no build version", s.Addr)
		case version == "":
			version = v
		case v != version:
			return "", fmt.Errorf("the observers run more than one version (%s, %s): the cluster's upgrade has not finished", version, v)
		}
	}
	if version == "" {
		return "", fmt.Errorf("DBA_OB_SERVERS lists no observer")
	}
	return version, nil
}

// TenantDataVersion reads the tenant's data version: its compatible
// parameter, from any server's row.
func TenantDataVersion(ctx context.Context, db *sql.DB, tenantID int64) (string, error) {
	rows, err := Parameter(ctx, db, "compatible")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r.Tenant && r.TenantID == tenantID {
			return r.Value, nil
		}
	}
	return "", fmt.Errorf("GV$OB_PARAMETERS has no compatible of tenant %d", tenantID)
}

// RunUpgradeJob starts the upgrade of the tenant called name to the
// observers' version (ALTER SYSTEM RUN UPGRADE JOB "UPGRADE_ALL", from
// sys); OceanBase raises its compatible when the job ends.
func RunUpgradeJob(ctx context.Context, db *sql.DB, name string) error {
	return alterSystemOnTenant(ctx, db, `RUN UPGRADE JOB "UPGRADE_ALL" TENANT = `, name)
}
