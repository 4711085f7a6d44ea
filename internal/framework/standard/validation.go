package standard

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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

// ValidateResources checks that each request is within its limit:
// Kubernetes rejects a pod whose request exceeds its limit, and the
// StatefulSet would never make one. (Negative quantities the dry run of
// the children reports.)
func ValidateResources(path *field.Path, res corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(res.Requests)) {
		request := res.Requests[name]
		if limit, ok := res.Limits[name]; ok && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests", string(name)), request.String(),
				fmt.Sprintf("must not exceed the limit (%s): Kubernetes rejects such pods", limit.String())))
		}
	}
	return errs
}

// ValidateDuration checks that a duration is not negative: a timeout or
// a period below zero means nothing. Unset (nil) is valid. A duration that
// does not parse never reaches here: the webhook refuses it naming the
// field.
func ValidateDuration(path *field.Path, d *metav1.Duration) field.ErrorList {
	if d != nil && d.Duration < 0 {
		return field.ErrorList{field.Invalid(path, d.Duration.String(), "must not be negative")}
	}
	return nil
}

// ValidateObjectName checks that name, a reference to an object of kind
// (a Secret, a PersistentVolumeClaim, a StorageClass, ...), is a name such
// an object can have (a DNS subdomain): no object of another name exists,
// and the spec would wait for it, or fail to make it, forever. Empty is
// valid: the caller says when a name is required.
func ValidateObjectName(path *field.Path, name, kind string) field.ErrorList {
	if name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, "not a valid "+kind+" name: "+msg))
	}
	return errs
}

// ValidateEndpoint checks that endpoint is a URL of one of schemes with
// a host, and a port, if it gives one, from 1 to 65535: what a client
// could dial. A pattern in the schema passes "http://:2379" and
// "http://etcd:99999".
func ValidateEndpoint(path *field.Path, endpoint string, schemes ...string) field.ErrorList {
	invalid := func(why string) field.ErrorList { return field.ErrorList{field.Invalid(path, endpoint, why)} }
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return invalid("not a URL: " + err.Error())
	case !slices.Contains(schemes, u.Scheme):
		return invalid(fmt.Sprintf("must be a URL of scheme %s", strings.Join(schemes, " or ")))
	case u.Hostname() == "":
		return invalid("must name a host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "":
		return invalid("must be scheme://host[:port] only, without user, path, query or fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return invalid(fmt.Sprintf("port %s is not from 1 to 65535", p))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return invalid("an empty port: give one from 1 to 65535, or none")
	}
	// A fully qualified name ends in a dot (etcd.ns.svc.cluster.local.),
	// which resolvers take, and which saves search-domain lookups.
	for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")) {
		if net.ParseIP(u.Hostname()) == nil {
			return invalid("host " + u.Hostname() + " is neither an IP address nor a DNS name: " + msg)
		}
	}
	return nil
}
