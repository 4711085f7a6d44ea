package simulator

import (
	"fmt"
	"strings"
	"time"
)

// Knobs change how the simulator behaves, for tests; in the image they are
// environment variables, so that one binary can be built into a "good" and
// a "bad" version of GPSS.
type Knobs struct {
	// Version is what the simulator reports as its version: --version,
	// gpfdist's X-GPFDIST-VERSION and the instance's record in etcd
	// (GPSS_SIM_VERSION; default "simulator"). Each image of the simulator
	// sets it to its tag's version (images/gpss-simulator), so that an
	// upgrade shows in what the instances say, not only in the pod's image.
	Version string
	// FailStart, when set, makes the simulator exit with this message
	// before it listens: a version that never becomes ready
	// (GPSS_SIM_FAIL_START).
	FailStart string
	// StopDelay is how long an instance takes to stop a job
	// (GPSS_SIM_STOP_DELAY, a Go duration; default 0).
	StopDelay time.Duration
	// RefuseKeys are dotted gpss.json keys this version refuses to start
	// with, as a newer GPSS may refuse a setting an older one accepted
	// (GPSS_SIM_REFUSE_KEYS, comma-separated).
	RefuseKeys []string
}

// KnobsFromEnv reads the knobs from getenv (os.Getenv).
func KnobsFromEnv(getenv func(string) string) (Knobs, error) {
	k := Knobs{Version: getenv("GPSS_SIM_VERSION"), FailStart: getenv("GPSS_SIM_FAIL_START")}
	if k.Version == "" {
		k.Version = "simulator"
	}
	if v := getenv("GPSS_SIM_STOP_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return Knobs{}, fmt.Errorf("GPSS_SIM_STOP_DELAY=%q is not a duration", v)
		}
		k.StopDelay = d
	}
	for key := range strings.SplitSeq(getenv("GPSS_SIM_REFUSE_KEYS"), ",") {
		if key = strings.TrimSpace(key); key != "" {
			k.RefuseKeys = append(k.RefuseKeys, key)
		}
	}
	return k, nil
}

// VersionLine is how an instance states its version, in --version and in
// gpfdist's X-GPFDIST-VERSION: "gpss-simulator 1.1", the simulator's
// name first, since it is not GPSS.
func VersionLine(version string) string { return "gpss-simulator " + version }
