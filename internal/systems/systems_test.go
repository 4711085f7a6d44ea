package systems

import (
	"errors"
	"slices"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

func noopSetup(ctrl.Manager) error { return nil }

func TestKnownIsSortedAndCopied(t *testing.T) {
	got := Known()
	want := []string{"gpss", "matrixone", "oceanbase", "zookeeper"}
	if !slices.Equal(got, want) {
		t.Fatalf("Known() = %v, want %v", got, want)
	}
	got[0] = "mutated"
	if Known()[0] != "gpss" {
		t.Fatal("Known() returned the registry's own slice; callers can mutate it")
	}
}

// previewing makes the systems named preview ones for the test.
func previewing(t *testing.T, names ...string) {
	saved := preview
	preview = names
	t.Cleanup(func() { preview = saved })
}

func TestPreview(t *testing.T) {
	for _, name := range Preview() {
		if !IsKnown(name) {
			t.Errorf("preview system %q is not known", name)
		}
	}
	if !slices.IsSorted(preview) {
		t.Error("preview is not sorted: IsPreview searches it")
	}
	previewing(t, GPSS)
	if got := Preview(); !slices.Equal(got, []string{"gpss"}) || !IsPreview("gpss") || IsPreview("zookeeper") {
		t.Fatalf("Preview() = %v", got)
	}
}

func TestSelectLeavesPreviewsOutOfAll(t *testing.T) {
	previewing(t, GPSS)
	two := NewRegistry(System{Name: ZooKeeper, Setup: noopSetup}, System{Name: GPSS, Setup: noopSetup})
	for spec, want := range map[string][]string{"all": {"zookeeper"}, "": {"zookeeper"}, "gpss": {"gpss"}, "gpss,zookeeper": {"gpss", "zookeeper"}} {
		selected, err := two.Select(spec)
		if err != nil {
			t.Fatalf("Select(%q): %v", spec, err)
		}
		var got []string
		for _, s := range selected {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Select(%q) = %v, want %v", spec, got, want)
		}
	}
}

func TestSelect(t *testing.T) {
	empty := NewRegistry()
	two := NewRegistry(
		System{Name: ZooKeeper, Setup: noopSetup},
		System{Name: GPSS, Setup: noopSetup},
	)

	tests := []struct {
		name     string
		registry *Registry
		spec     string
		want     []string
		wantErr  []string // substrings the error must contain; nil means no error
	}{
		{name: "all on an empty registry selects none", registry: empty, spec: "all", want: []string{}},
		{name: "empty spec on an empty registry selects none", registry: empty, spec: "", want: []string{}},
		{name: "all selects every registered system sorted", registry: two, spec: "all", want: []string{"gpss", "zookeeper"}},
		{name: "empty spec means all", registry: two, spec: "  ", want: []string{"gpss", "zookeeper"}},
		{name: "single name", registry: two, spec: "zookeeper", want: []string{"zookeeper"}},
		{name: "list is sorted, trimmed and deduplicated", registry: two, spec: " zookeeper, gpss ,zookeeper,", want: []string{"gpss", "zookeeper"}},
		{
			name: "known but not built", registry: empty, spec: "zookeeper",
			wantErr: []string{`system "zookeeper" is not available in this build (available: none)`},
		},
		{
			name: "known but not built lists what is available", registry: two, spec: "matrixone",
			wantErr: []string{`system "matrixone" is not available in this build (available: gpss, zookeeper)`},
		},
		{
			name: "unknown name", registry: empty, spec: "foo",
			wantErr: []string{`unknown system "foo" (known: gpss, matrixone, oceanbase, zookeeper)`},
		},
		{
			name: "names are case sensitive", registry: two, spec: "ZooKeeper",
			wantErr: []string{`unknown system "ZooKeeper"`},
		},
		{
			name: "every bad name is reported", registry: two, spec: "foo,zookeeper,oceanbase",
			wantErr: []string{`unknown system "foo" (known: `, `; system "oceanbase" is not available in this build (available: gpss, zookeeper)`},
		},
		{
			name: "several unknown and unavailable names", registry: empty, spec: "foo,bar,zookeeper,gpss",
			wantErr: []string{
				`unknown systems "bar", "foo" (known: gpss, matrixone, oceanbase, zookeeper)`,
				`systems "gpss", "zookeeper" are not available in this build (available: none)`,
			},
		},
		{
			name: "a repeated bad name is reported once", registry: empty, spec: "foo,foo",
			wantErr: []string{`unknown system "foo" (known: `},
		},
		{
			name: "all cannot be mixed", registry: two, spec: "all,gpss",
			wantErr: []string{`"all" cannot be combined with system names`},
		},
		{
			name: "only separators", registry: two, spec: " , ,",
			wantErr: []string{`no system named in ", ,"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.registry.Select(tt.spec)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Select(%q) = %v, want an error", tt.spec, names(got))
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Select(%q) error = %q, want it to contain %q", tt.spec, err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Select(%q) error = %v", tt.spec, err)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("Select(%q) = %v, want %v", tt.spec, names(got), tt.want)
			}
		})
	}
}

func TestSelectReturnsRegisteredSetup(t *testing.T) {
	errSentinel := errors.New("called")
	r := NewRegistry(System{Name: OceanBase, Setup: func(ctrl.Manager) error { return errSentinel }})
	got, err := r.Select(OceanBase)
	if err != nil {
		t.Fatalf("Select error = %v", err)
	}
	if len(got) != 1 || !errors.Is(got[0].Setup(nil), errSentinel) {
		t.Fatalf("Select did not return the registered Setup function")
	}
}

func TestAvailable(t *testing.T) {
	var zero Registry
	if got := zero.Available(); len(got) != 0 {
		t.Errorf("zero Registry Available() = %v, want none", got)
	}
	r := NewRegistry(System{Name: ZooKeeper, Setup: noopSetup}, System{Name: MatrixOne, Setup: noopSetup})
	if got, want := r.Available(), []string{"matrixone", "zookeeper"}; !slices.Equal(got, want) {
		t.Errorf("Available() = %v, want %v", got, want)
	}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name   string
		system System
		want   string
	}{
		{name: "unknown name", system: System{Name: "etcd", Setup: noopSetup}, want: `unknown system "etcd"`},
		{name: "nil setup", system: System{Name: ZooKeeper}, want: "nil Setup"},
		{name: "duplicate", system: System{Name: GPSS, Setup: noopSetup}, want: "registered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(System{Name: GPSS, Setup: noopSetup})
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tt.want) {
					t.Errorf("Register panic = %q, want it to contain %q", msg, tt.want)
				}
			}()
			r.Register(tt.system)
		})
	}
}

func names(systems []System) []string {
	out := make([]string, 0, len(systems))
	for _, s := range systems {
		out = append(out, s.Name)
	}
	return out
}
