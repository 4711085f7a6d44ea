package standard_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/internal/framework/standard"
)

func TestValidateImage(t *testing.T) {
	for image, valid := range map[string]bool{
		"localhost/zookeeper:3.8.0": true,
		"zookeeper":                 true,
		"registry.example:5000/team/zookeeper@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"ZooKeeper":        false, // repository names are lower case
		"zookeeper:3.8.0 ": false,
		"zoo keeper":       false,
		"":                 false,
	} {
		if errs := standard.ValidateImage(field.NewPath("spec", "image"), image); (len(errs) == 0) != valid {
			t.Errorf("ValidateImage(%q) = %v, want valid %v", image, errs, valid)
		}
	}
}

func TestValidateNodePort(t *testing.T) {
	path := field.NewPath("spec", "nodePort")
	for port, valid := range map[int32]bool{29999: false, 30000: true, 32767: true, 32768: false} {
		if errs := standard.ValidateNodePort(path, port); (len(errs) == 0) != valid {
			t.Errorf("ValidateNodePort(%d) = %v, want valid %v", port, errs, valid)
		}
	}
	for s, valid := range map[string]bool{"30000-32767": true, "1-65535": true, "80": false, "9-8": false, "0-10": false, "1-65536": false} {
		if _, err := standard.ParsePortRange(s); (err == nil) != valid {
			t.Errorf("ParsePortRange(%q) = %v, want valid %v", s, err, valid)
		}
	}
}

func TestValidateSettings(t *testing.T) {
	types := map[string]standard.SettingType{"n": standard.SettingInteger, "b": standard.SettingBoolean, "y": standard.SettingYesNo}
	errs := standard.ValidateSettings(field.NewPath("spec", "config"), map[string]string{
		"n": "10s", "b": "yes", "y": "true", "other": "anything",
	}, types)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if want := "[spec.config[b] spec.config[n] spec.config[y]]"; fmt.Sprint(fields) != want {
		t.Errorf("errors on %v, want %s: %v", fields, want, errs)
	}
	if errs := standard.ValidateSettings(field.NewPath("spec", "config"), map[string]string{"n": "0", "b": "false", "y": "no"}, types); len(errs) > 0 {
		t.Errorf("valid settings rejected: %v", errs)
	}
}

func TestValidateResources(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name string
		res  corev1.ResourceRequirements
		want []string // the fields refused
	}{
		{"none", corev1.ResourceRequirements{}, nil},
		{"requests only", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("2")}}, nil},
		{"equal", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}, Limits: corev1.ResourceList{"cpu": q("1000m")}}, nil},
		{"requests above limits", corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"memory": q("2Gi"), "cpu": q("2")},
			Limits:   corev1.ResourceList{"memory": q("1Gi"), "cpu": q("1")},
		}, []string{"spec.resources.requests.cpu", "spec.resources.requests.memory"}},
	} {
		var got []string
		for _, e := range standard.ValidateResources(field.NewPath("spec", "resources"), tc.res) {
			got = append(got, e.Field)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: refused %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestValidateDuration(t *testing.T) {
	for _, tc := range []struct {
		d     *metav1.Duration
		valid bool
	}{
		{nil, true}, {&metav1.Duration{}, true}, {&metav1.Duration{Duration: time.Minute}, true},
		{&metav1.Duration{Duration: -time.Second}, false},
	} {
		errs := standard.ValidateDuration(field.NewPath("spec", "timeout"), tc.d)
		if (len(errs) == 0) != tc.valid {
			t.Errorf("ValidateDuration(%v) = %v, want valid %v", tc.d, errs, tc.valid)
		}
		if len(errs) > 0 && errs[0].Error() != `spec.timeout: Invalid value: "-1s": must not be negative` {
			t.Errorf("message %q", errs[0].Error())
		}
	}
}

func TestValidateObjectName(t *testing.T) {
	for name, valid := range map[string]bool{
		"":                       true, // unset: the caller requires it or not
		"root":                   true,
		"a.b-c":                  true,
		"Root":                   false,
		"my_secret":              false,
		"-x":                     false,
		"a b":                    false,
		strings.Repeat("a", 254): false,
	} {
		errs := standard.ValidateObjectName(field.NewPath("spec", "secret"), name, "Secret")
		if (len(errs) == 0) != valid {
			t.Errorf("ValidateObjectName(%q) = %v, want valid %v", name, errs, valid)
		}
		if len(errs) > 0 && !strings.Contains(errs[0].Error(), "spec.secret: Invalid value") {
			t.Errorf("message %q does not name the field", errs[0].Error())
		}
	}
}

func TestValidateEndpoint(t *testing.T) {
	for endpoint, valid := range map[string]bool{
		"http://etcd:2379":                       true,
		"https://etcd.ns.svc":                    true,
		"https://10.0.0.1:2379":                  true,
		"http://[::1]:2379":                      true,
		"https://minio.storage:9000/":            true,
		"http://etcd.ns.svc.cluster.local.:2379": true, // fully qualified
		"http://etcd..ns:2379":                   false,
		"http://:2379":                           false, // no host
		"http://etcd:0":                          false,
		"http://etcd:65536":                      false,
		"http://etcd:99999":                      false,
		"http://etcd:":                           false,
		"etcd:2379":                              false, // no scheme
		"ftp://etcd":                             false,
		"http://user:pw@etcd":                    false,
		"http://etcd/path":                       false,
		"http://etcd?x=1":                        false,
		"http://et_cd":                           false,
		"http://etcd:2379\t":                     false, // a stray tab
	} {
		errs := standard.ValidateEndpoint(field.NewPath("spec", "endpoint"), endpoint, "http", "https")
		if (len(errs) == 0) != valid {
			t.Errorf("ValidateEndpoint(%q) = %v, want valid %v", endpoint, errs, valid)
		}
	}
}

func TestImageVersion(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"localhost/matrixone:1.2.4", "1.2.4"},
		{"registry.example:5000/mo/matrixone:v1.2.3", "1.2.3"},
		{"zookeeper:3.8.4-rc1", "3.8.4-rc1"},
		{"localhost/matrixone:1.2.4@sha256:" + strings.Repeat("a", 64), "1.2.4"},
		{"localhost/matrixone:latest", ""},
		{"localhost/matrixone:1.2", ""}, // not a full version: nothing to compare safely
		{"localhost/matrixone", ""},
		{"localhost/matrixone@sha256:" + strings.Repeat("a", 64), ""},
		{"Not An Image", ""},
	} {
		got := ""
		if v := standard.ImageVersion(tc.image); v != nil {
			got = v.String()
		}
		if got != tc.want {
			t.Errorf("ImageVersion(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}
