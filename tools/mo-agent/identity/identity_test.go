package identity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

func TestResolve(t *testing.T) {
	const ns, pod = "db", "mo-log-2"
	original := wire.StoreID(ns, pod)
	const replacement = "2f1c51a6-3d34-5b7e-9a0e-4c1b7d1b8a11"
	const podUID = "0b7e1b9c-9d6a-4f8e-8f53-2a9c1c7d5e10"
	hakeeperKnows := func(uuids ...string) func(context.Context, string) (bool, error) {
		return func(_ context.Context, uuid string) (bool, error) {
			for _, u := range uuids {
				if u == uuid {
					return true, nil
				}
			}
			return false, nil
		}
	}
	unreachable := func(context.Context, string) (bool, error) { return false, errors.New("connection refused") }
	for _, tc := range []struct {
		name string
		// volume is the volume's files before the start; stores the
		// stores ConfigMap's keys (nil: not mounted).
		volume, stores map[string]string
		known          func(context.Context, string) (bool, error)
		want, wantErr  string
	}{
		{name: "a new set: the pod's name", volume: map[string]string{}, stores: map[string]string{},
			known: unreachable, want: original},
		{name: "a new volume, ConfigMap not mounted", volume: map[string]string{"lost+found/": ""}, want: original},
		{name: "recorded: kept whatever the ConfigMap says", volume: map[string]string{File: "a-recorded-uuid\n", "data/": ""},
			stores: map[string]string{pod: replacement, BootstrappedFile: "true"}, known: unreachable, want: "a-recorded-uuid"},
		{name: "data from before identity files: the pod's name", volume: map[string]string{"data/": ""},
			stores: map[string]string{pod: replacement, BootstrappedFile: "true"}, known: unreachable, want: original},
		{name: "replaced, HAKeeper does not know the new UUID", volume: map[string]string{},
			stores: map[string]string{pod: replacement, BootstrappedFile: "true"}, known: hakeeperKnows(original), want: replacement},
		{name: "replaced, in the failed pod restarting on its doomed volume: refused", volume: map[string]string{},
			stores: map[string]string{pod: replacement, wire.FailedPodKey(pod): podUID, BootstrappedFile: "true"},
			known:  hakeeperKnows(original), wantErr: "it deletes this pod and its volume next"},
		{name: "replaced, in the pod re-created on the new volume", volume: map[string]string{},
			stores: map[string]string{pod: replacement, wire.FailedPodKey(pod): "the-failed-pod-uid", BootstrappedFile: "true"},
			known:  hakeeperKnows(original), want: replacement},
		{name: "a volume lost after the bootstrap: refused", volume: map[string]string{"lost+found/": ""},
			stores: map[string]string{BootstrappedFile: "true"}, known: hakeeperKnows(original), wantErr: "HAKeeper knows store " + original},
		{name: "after the bootstrap, HAKeeper unreachable: refused", volume: map[string]string{},
			stores: map[string]string{pod: replacement, BootstrappedFile: "true"}, known: unreachable, wantErr: "could not be asked"},
		{name: "an empty identity file: refused", volume: map[string]string{File: "\n"}, wantErr: "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			volume := filepath.Join(dir, "volume")
			populate(t, volume, tc.volume)
			r := Resolver{Namespace: ns, Pod: pod, Volume: volume, Known: tc.known, PodUID: podUID}
			if tc.stores != nil {
				r.Stores = filepath.Join(dir, "stores")
				populate(t, r.Stores, tc.stores)
			}
			got, err := r.Resolve(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve() = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				if _, err := os.Stat(filepath.Join(volume, File)); tc.volume[File] == "" && err == nil {
					t.Errorf("a refused start recorded an identity")
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve() = %q, %v; want %q", got, err, tc.want)
			}
			recorded, err := os.ReadFile(filepath.Join(volume, File))
			if err != nil || strings.TrimSpace(string(recorded)) != tc.want {
				t.Fatalf("recorded %q, %v; want %q", recorded, err, tc.want)
			}
			// The next start reads it back, whatever else changed.
			r.Stores, r.Known = "", unreachable
			if again, err := r.Resolve(context.Background()); err != nil || again != tc.want {
				t.Errorf("second Resolve() = %q, %v; want %q", again, err, tc.want)
			}
		})
	}
}

// populate makes dir with files (a name ending in "/" is a directory).
func populate(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
