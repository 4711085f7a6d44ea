package obsql

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"4.3.5.1", "4.3.5.1", 0},
		{"4.3.5.1", "4.3.5.2", -1},
		{"4.3.10.0", "4.3.9.9", 1},
		{"4.3", "4.3.0.0", 0},
		{"4.2.5.1", "4.3", -1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestServersVersion(t *testing.T) {
	build := func(v string) Server {
		return Server{Addr: "10.0.0.1:2882", BuildVersion: v + "_101000012025012817-obsim(Jan 28 2025 17:00:00)"}
	}
	for _, c := range []struct {
		name    string
		servers []Server
		want    string // "": an error
	}{
		{"one version", []Server{build("4.3.5.1"), build("4.3.5.1")}, "4.3.5.1"},
		{"mid-upgrade", []Server{build("4.3.5.1"), build("4.3.5.2")}, ""},
		{"no servers", nil, ""},
		{"no build version", []Server{{Addr: "10.0.0.1:2882"}}, ""},
	} {
		got, err := ServersVersion(c.servers)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
