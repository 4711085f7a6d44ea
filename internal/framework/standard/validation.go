package standard

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks below are for what neither a CRD schema nor the API server's
// validation of the children catches (see framework.ChildRenderer): a
// container image is any non-blank string to the API server, and a
// server-side dry run does not check a node port against the cluster's
// range. Each returns field errors naming the field.

// ValidateImage checks that image is a container image reference, as the
// kubelet parses it: a pod with another image never starts
// (InvalidImageName).
func ValidateImage(path *field.Path, image string) field.ErrorList {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return field.ErrorList{field.Invalid(path, image, "not a container image reference: "+err.Error())}
	}
	return nil
}

// NodePortRange is the range node ports are allocated from: the API
// server's --service-node-port-range, 30000-32767 unless the cluster
// chose another. The manager sets it from its own flag of that name.
var NodePortRange = PortRange{First: 30000, Last: 32767}

// PortRange is an inclusive range of ports.
type PortRange struct{ First, Last int32 }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// ParsePortRange parses "first-last".
func ParsePortRange(s string) (PortRange, error) {
	var r PortRange
	if _, err := fmt.Sscanf(s, "%d-%d", &r.First, &r.Last); err != nil || r.First < 1 || r.Last > 65535 || r.First > r.Last {
		return PortRange{}, fmt.Errorf("%q is not a port range first-last within 1-65535", s)
	}
	return r, nil
}

// ValidateNodePort checks that port is in NodePortRange: the API server
// rejects a Service with another, but only when it is really created.
func ValidateNodePort(path *field.Path, port int32) field.ErrorList {
	if port < NodePortRange.First || port > NodePortRange.Last {
		return field.ErrorList{field.Invalid(path, port, fmt.Sprintf("must be in the cluster's node port range, %s", NodePortRange))}
	}
	return nil
}

// SettingType is the type of an application setting that is given as text
// (a configuration file's value).
type SettingType int

// The setting types.
const (
	// SettingInteger is a whole number, zero or more.
	SettingInteger SettingType = iota + 1
	// SettingBoolean is "true" or "false".
	SettingBoolean
	// SettingYesNo is "yes" or "no".
	SettingYesNo
)

// ValidateSettings checks the value of every key of values that types
// knows: a value that does not parse as its type is rejected with the key.
// Keys types does not know are left to the application.
func ValidateSettings(path *field.Path, values map[string]string, types map[string]SettingType) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(values)) {
		t, known := types[k]
		if !known {
			continue
		}
		v := values[k]
		var want string
		switch t {
		case SettingInteger:
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				want = "a whole number, zero or more"
			}
		case SettingBoolean:
			if v != "true" && v != "false" {
				want = `"true" or "false"`
			}
		case SettingYesNo:
			if v != "yes" && v != "no" {
				want = `"yes" or "no"`
			}
		}
		if want != "" {
			errs = append(errs, field.Invalid(path.Key(k), v, "must be "+want))
		}
	}
	return errs
}
