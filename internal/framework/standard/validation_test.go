package standard_test

import (
	"fmt"
	"testing"

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
