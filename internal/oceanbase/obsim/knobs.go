package obsim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Knobs change the simulator's delays and inject faults. In the image they
// are environment variables (KnobsFromEnv); tests in the same process set
// them on Config, and tests of pods change them at run time through the
// control endpoint (POST /obsim/v1/knobs on the RPC port).
type Knobs struct {
	// BootstrapDelay is how long ALTER SYSTEM BOOTSTRAP takes
	// (OBSIM_BOOTSTRAP_DELAY; default 2s). Real bootstraps take minutes.
	BootstrapDelay Duration `json:"bootstrapDelay,omitempty"`
	// StartServiceDelay is how long a server that joined (or whose process
	// came back) takes to start serving: start_service_time stays NULL
	// until then (OBSIM_START_SERVICE_DELAY; default 1s).
	StartServiceDelay Duration `json:"startServiceDelay,omitempty"`
	// Lease is how long the RootService waits without a heartbeat before
	// it marks a server INACTIVE, and how long members wait without the
	// RootService before they elect another (OBSIM_LEASE; default 4s; 10s
	// in OceanBase).
	Lease Duration `json:"lease,omitempty"`
	// Heartbeat is how often the RootService pushes its state to the
	// members (OBSIM_HEARTBEAT; default 500ms).
	Heartbeat Duration `json:"heartbeat,omitempty"`
	// MigrateDelay is how long a unit takes to move off a deleting server
	// (OBSIM_MIGRATE_DELAY; default 1s).
	MigrateDelay Duration `json:"migrateDelay,omitempty"`
	// TenantDelay is how long CREATE TENANT, DROP TENANT and a locality
	// change take (OBSIM_TENANT_DELAY; default 1s).
	TenantDelay Duration `json:"tenantDelay,omitempty"`
	// HangDelete makes DELETE SERVER never finish: the server stays
	// DELETING, as when its units have nowhere to go
	// (OBSIM_HANG_DELETE=true).
	HangDelete bool `json:"hangDelete,omitempty"`
	// ArchiveDelay is how long a log archive round stays BEGINNING before
	// it is DOING (OBSIM_ARCHIVE_DELAY; default 1s).
	ArchiveDelay Duration `json:"archiveDelay,omitempty"`
	// BackupDelay is how long a data backup job is DOING before it writes
	// its set (OBSIM_BACKUP_DELAY; default 2s).
	BackupDelay Duration `json:"backupDelay,omitempty"`
	// RestoreDelay is how long a restore job runs before it reads the
	// destinations (OBSIM_RESTORE_DELAY; default 2s).
	RestoreDelay Duration `json:"restoreDelay,omitempty"`
	// HangBackup keeps data backup jobs DOING for ever
	// (OBSIM_HANG_BACKUP=true).
	HangBackup bool `json:"hangBackup,omitempty"`
	// Faults fail or slow statements that match a pattern
	// (OBSIM_FAULTS, a JSON list of Fault).
	Faults []Fault `json:"faults,omitempty"`
	// BuildVersion is the server's build_version
	// (OBSIM_BUILD_VERSION; default DefaultBuildVersion).
	BuildVersion string `json:"buildVersion,omitempty"`
}

// DefaultBuildVersion is the build_version a node reports by default, in
// OceanBase's format.
const DefaultBuildVersion = "4.3.5.1_101000012025012817-obsim(Jan 28 2025 17:00:00)"

// serverVersion is the version the MySQL handshake announces for a
// build_version, as an observer's does ("5.7.25-OceanBase_CE-v4.3.5.1"
// for 4.3.5.1_...): the release before the first underscore.
func serverVersion(buildVersion string) string {
	release, _, _ := strings.Cut(buildVersion, "_")
	return "5.7.25-OceanBase_CE-v" + release
}

// Fault fails or delays the statements whose text matches Match (a
// case-insensitive regular expression).
type Fault struct {
	Match string `json:"match"`
	// Error, when set, fails the statement with this message (OceanBase
	// error 4000, "internal error"), Times times (0: every time).
	Error string `json:"error,omitempty"`
	// Delay delays the statement before it runs.
	Delay Duration `json:"delay,omitempty"`
	// Times bounds how often the fault fires; 0 means every time.
	Times int `json:"times,omitempty"`

	re *regexp.Regexp
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration struct{ time.Duration }

// MarshalText writes d as "1.5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration", b)
	}
	d.Duration = v
	return nil
}

func (k Knobs) withDefaults() Knobs {
	def := func(d *Duration, v time.Duration) {
		if d.Duration <= 0 {
			d.Duration = v
		}
	}
	def(&k.BootstrapDelay, 2*time.Second)
	def(&k.StartServiceDelay, time.Second)
	def(&k.Lease, 4*time.Second)
	def(&k.Heartbeat, 500*time.Millisecond)
	def(&k.MigrateDelay, time.Second)
	def(&k.TenantDelay, time.Second)
	def(&k.ArchiveDelay, time.Second)
	def(&k.BackupDelay, 2*time.Second)
	def(&k.RestoreDelay, 2*time.Second)
	if k.BuildVersion == "" {
		k.BuildVersion = DefaultBuildVersion
	}
	return k
}

func (k *Knobs) compile() error {
	for i := range k.Faults {
		re, err := regexp.Compile("(?i)" + k.Faults[i].Match)
		if err != nil {
			return fmt.Errorf("fault %d: %w", i, err)
		}
		k.Faults[i].re = re
	}
	return nil
}

// KnobsFromEnv reads the knobs from getenv (os.Getenv).
func KnobsFromEnv(getenv func(string) string) (Knobs, error) {
	var k Knobs
	durations := map[string]*Duration{
		"OBSIM_BOOTSTRAP_DELAY": &k.BootstrapDelay, "OBSIM_START_SERVICE_DELAY": &k.StartServiceDelay,
		"OBSIM_LEASE": &k.Lease, "OBSIM_HEARTBEAT": &k.Heartbeat, "OBSIM_MIGRATE_DELAY": &k.MigrateDelay,
		"OBSIM_TENANT_DELAY": &k.TenantDelay, "OBSIM_ARCHIVE_DELAY": &k.ArchiveDelay, "OBSIM_BACKUP_DELAY": &k.BackupDelay,
		"OBSIM_RESTORE_DELAY": &k.RestoreDelay,
	}
	for name, d := range durations {
		if v := getenv(name); v != "" {
			if err := d.UnmarshalText([]byte(v)); err != nil {
				return Knobs{}, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	k.HangDelete = strings.EqualFold(getenv("OBSIM_HANG_DELETE"), "true")
	k.HangBackup = strings.EqualFold(getenv("OBSIM_HANG_BACKUP"), "true")
	k.BuildVersion = getenv("OBSIM_BUILD_VERSION")
	if v := getenv("OBSIM_FAULTS"); v != "" {
		if err := json.Unmarshal([]byte(v), &k.Faults); err != nil {
			return Knobs{}, fmt.Errorf("OBSIM_FAULTS: %w", err)
		}
	}
	if err := k.compile(); err != nil {
		return Knobs{}, fmt.Errorf("OBSIM_FAULTS: %w", err)
	}
	return k.withDefaults(), nil
}
