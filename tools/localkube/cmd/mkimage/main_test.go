package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarEntry is one member of a test base layer.
type tarEntry struct {
	name     string
	typeflag byte
	mode     int64
	linkname string
	data     string
}

func writeBaseLayer(t *testing.T, path string, gz bool, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: e.mode, Linkname: e.linkname, Size: int64(len(e.data))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		b = z.Bytes()
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type layerFile struct {
	hdr  *tar.Header
	data string
}

// readLayer returns the members of an image layer, keyed by name, in order.
func readLayer(t *testing.T, l v1.Layer) (map[string]layerFile, []string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]layerFile{}
	var order []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = layerFile{hdr: h, data: string(b)}
		order = append(order, h.Name)
	}
	return files, order
}

// runMkimage runs the command and returns the printed id and digest.
func runMkimage(t *testing.T, env map[string]string, args ...string) (id, digest string, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err = run(args, &stdout, &stderr, func(k string) string { return env[k] })
	for _, line := range strings.Split(stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "id="); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(line, "digest="); ok {
			digest = v
		}
	}
	return id, digest, err
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "steward")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "zk-run")
	if err := os.WriteFile(script, []byte("#!/bin/bash\nexec java\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "rootfs.tar.gz")
	writeBaseLayer(t, base, true, []tarEntry{
		{name: "./", typeflag: tar.TypeDir, mode: 0o755},
		{name: "./bin", typeflag: tar.TypeSymlink, linkname: "usr/bin"},
		{name: "./tmp/", typeflag: tar.TypeDir, mode: 0o1777},
		{name: "./usr/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "./usr/bin/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "./usr/bin/java", typeflag: tar.TypeReg, mode: 0o755, data: "java"},
	})

	type wantFile struct {
		mode int64
		data string // "" for a directory
	}
	tests := []struct {
		name       string
		args       []string
		wantLayers int
		wantConfig v1.Config
		// members of the top layer, in archive order
		wantFiles []string
		wantFile  map[string]wantFile
		wantErr   string
	}{
		{
			name: "operator image: one static binary, non-root",
			args: []string{
				"--tag", "localhost/steward:dev",
				"--file", bin + ":/steward:0755",
				"--entrypoint", "/steward",
				"--user", "65532:65532",
			},
			wantLayers: 1,
			wantConfig: v1.Config{Entrypoint: []string{"/steward"}, User: "65532:65532"},
			wantFiles:  []string{"steward"},
			wantFile:   map[string]wantFile{"steward": {0o755, "\x7fELF not really"}},
		},
		{
			name: "parents are created, mode defaults to the source's",
			args: []string{
				"--tag", "localhost/tool:1", "--tag", "localhost/tool:latest",
				"--file", script + ":/usr/local/bin/zk-run",
				"--file", bin + ":/opt/steward/steward:4755",
				"--entrypoint", "/usr/local/bin/zk-run", "--entrypoint", "--verbose",
				"--cmd", "server",
				"--env", "ZK_HEAP=512m", "--env", "PATH=/usr/bin:/bin",
				"--user", "100:101", "--workdir", "/data",
				"--expose", "2181", "--expose", "53/udp",
				"--label", "org.opencontainers.image.version=3.8.0",
			},
			wantLayers: 1,
			wantConfig: v1.Config{
				Entrypoint:   []string{"/usr/local/bin/zk-run", "--verbose"},
				Cmd:          []string{"server"},
				Env:          []string{"ZK_HEAP=512m", "PATH=/usr/bin:/bin"},
				User:         "100:101",
				WorkingDir:   "/data",
				ExposedPorts: map[string]struct{}{"2181/tcp": {}, "53/udp": {}},
				Labels:       map[string]string{"org.opencontainers.image.version": "3.8.0"},
			},
			wantFiles: []string{"opt/", "opt/steward/", "opt/steward/steward", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/zk-run"},
			wantFile: map[string]wantFile{
				"usr/local/bin/":       {0o755, ""},
				"usr/local/bin/zk-run": {0o750, "#!/bin/bash\nexec java\n"},
				"opt/steward/steward":  {0o4755, "\x7fELF not really"},
			},
		},
		{
			name: "on a root filesystem existing parents are left alone",
			args: []string{
				"--tag", "localhost/zookeeper:3.8.0",
				"--layer", base,
				"--file", script + ":/usr/local/bin/zk-run:0755",
				"--file", bin + ":/tmp/x:0644",
				"--entrypoint", "/usr/local/bin/zk-run",
				"--user", "100:101",
			},
			wantLayers: 2,
			wantConfig: v1.Config{Entrypoint: []string{"/usr/local/bin/zk-run"}, User: "100:101"},
			wantFiles:  []string{"tmp/x", "usr/local/", "usr/local/bin/", "usr/local/bin/zk-run"},
			wantFile:   map[string]wantFile{"usr/local/bin/zk-run": {0o755, "#!/bin/bash\nexec java\n"}},
		},
		{
			name:    "a parent that is a symlink in the root filesystem is refused",
			args:    []string{"--tag", "localhost/x:1", "--layer", base, "--file", bin + ":/bin/steward"},
			wantErr: "parent /bin is a symlink",
		},
		{
			name:    "a directory cannot be replaced by a file",
			args:    []string{"--tag", "localhost/x:1", "--layer", base, "--file", bin + ":/usr/bin"},
			wantErr: "is a directory in an earlier layer",
		},
		{
			name:    "relative destination",
			args:    []string{"--tag", "localhost/x:1", "--file", bin + ":steward"},
			wantErr: "DST must be absolute",
		},
		{
			name:    "same destination twice",
			args:    []string{"--tag", "localhost/x:1", "--file", bin + ":/a", "--file", script + ":/a"},
			wantErr: "given twice",
		},
		{
			name:    "bad mode",
			args:    []string{"--tag", "localhost/x:1", "--file", bin + ":/a:rwx"},
			wantErr: "MODE must be octal",
		},
		{
			name:    "env without =",
			args:    []string{"--tag", "localhost/x:1", "--env", "FOO"},
			wantErr: "want K=V",
		},
		{
			name:    "no tag",
			args:    []string{"--file", bin + ":/a"},
			wantErr: "--tag is required",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out", strings.ReplaceAll(t.Name(), "/", "_"), "image.tar")
			args := append(slices.Clone(tc.args), "--output", out)
			id, digest, err := runMkimage(t, nil, args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if _, statErr := os.Stat(out); statErr == nil {
					t.Errorf("%s written despite the error", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}

			img, err := tarball.ImageFromPath(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := img.ConfigName(); got.String() != id {
				t.Errorf("printed id %s, archive has %s", id, got)
			}
			if got, _ := img.Digest(); got.String() != digest {
				t.Errorf("printed digest %s, archive image has %s", digest, got)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cf.Config, tc.wantConfig) {
				t.Errorf("config = %+v\nwant     %+v", cf.Config, tc.wantConfig)
			}
			if cf.OS != "linux" || cf.Architecture == "" {
				t.Errorf("platform = %s/%s, want linux/<arch>", cf.OS, cf.Architecture)
			}
			if !cf.Created.Equal(time.Unix(0, 0)) {
				t.Errorf("created = %v, want the epoch", cf.Created)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != tc.wantLayers {
				t.Fatalf("%d layers, want %d", len(layers), tc.wantLayers)
			}
			if len(cf.History) != tc.wantLayers {
				t.Errorf("%d history entries, want %d", len(cf.History), tc.wantLayers)
			}
			files, order := readLayer(t, layers[len(layers)-1])
			if !reflect.DeepEqual(order, tc.wantFiles) {
				t.Errorf("top layer = %q, want %q", order, tc.wantFiles)
			}
			for name, f := range files {
				h := f.hdr
				if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
					t.Errorf("%s: uid %d gid %d mtime %v, want root and the epoch", name, h.Uid, h.Gid, h.ModTime)
				}
				if strings.HasSuffix(name, "/") && (h.Typeflag != tar.TypeDir || h.Mode != 0o755) {
					t.Errorf("%s: type %c mode %o, want a 0755 directory", name, h.Typeflag, h.Mode)
				}
			}
			for name, want := range tc.wantFile {
				f, ok := files[name]
				if !ok {
					t.Errorf("%s missing from the top layer", name)
					continue
				}
				if f.hdr.Mode != want.mode || f.data != want.data {
					t.Errorf("%s: mode %o data %q, want mode %o data %q", name, f.hdr.Mode, f.data, want.mode, want.data)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "steward")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "rootfs.tar")
	writeBaseLayer(t, base, false, []tarEntry{
		{name: "./", typeflag: tar.TypeDir, mode: 0o755},
		{name: "./etc/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "./etc/passwd", typeflag: tar.TypeReg, mode: 0o644, data: "root:x:0:0::/root:/bin/sh\n"},
	})
	build := func(out string, env map[string]string, extra ...string) (string, string, []byte) {
		t.Helper()
		args := append([]string{
			"--tag", "localhost/steward:dev",
			"--layer", base,
			"--file", bin + ":/usr/bin/steward:0755",
			"--file", bin + ":/a/b/c:0644",
			"--entrypoint", "/usr/bin/steward",
			"--env", "A=1",
			"--label", "b=2", "--label", "a=1",
			"--output", filepath.Join(dir, out),
		}, extra...)
		id, digest, err := runMkimage(t, env, args...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return id, digest, b
	}

	id1, d1, b1 := build("one.tar", nil)
	// Different file times on the host must not matter.
	if err := os.Chtimes(bin, time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	id2, d2, b2 := build("two.tar", nil)
	if id1 != id2 || d1 != d2 {
		t.Errorf("same inputs, different images: %s %s vs %s %s", id1, d1, id2, d2)
	}
	if !bytes.Equal(b1, b2) {
		t.Errorf("same inputs, archives differ")
	}

	id3, d3, _ := build("three.tar", map[string]string{"SOURCE_DATE_EPOCH": "1700000000"})
	if id3 == id1 || d3 == d1 {
		t.Errorf("SOURCE_DATE_EPOCH did not change the image")
	}
	id4, _, _ := build("four.tar", nil, "--created", "1700000000")
	if id4 != id3 {
		t.Errorf("--created 1700000000 gave %s, SOURCE_DATE_EPOCH gave %s", id4, id3)
	}
}
