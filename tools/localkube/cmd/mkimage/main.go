package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mkimage:", err)
		}
		os.Exit(2)
	}
}

// stringList is a repeatable flag; every occurrence appends one value.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// fileSpec is one parsed --file SRC:DST[:MODE].
type fileSpec struct {
	src  string
	dst  string // cleaned, relative to the image root (no leading "/")
	mode int64  // -1: take the source file's permission bits
}

type options struct {
	tags       []name.Tag
	layers     []string
	files      []fileSpec
	entrypoint []string
	cmd        []string
	env        []string
	user       string
	workdir    string
	expose     []string
	labels     map[string]string
	osName     string
	arch       string
	created    time.Time
	output     string
}

func parseArgs(args []string, stderr io.Writer, getenv func(string) string) (*options, error) {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mkimage --tag REF --output PATH [--layer TAR] [--file SRC:DST[:MODE]] [config flags]; see `go doc` for details")
		fs.PrintDefaults()
	}
	var tags, layers, files, entrypoint, cmd, env, expose, labels stringList
	fs.Var(&tags, "tag", "image reference, e.g. localhost/zookeeper:3.8.0 (repeatable)")
	fs.Var(&layers, "layer", "existing layer tarball, plain or gzip (repeatable, bottom first)")
	fs.Var(&files, "file", "SRC:DST[:MODE] file for the extra in-memory layer (repeatable)")
	fs.Var(&entrypoint, "entrypoint", "one entrypoint argv element (repeat for each)")
	fs.Var(&cmd, "cmd", "one cmd argv element (repeat for each)")
	fs.Var(&env, "env", "K=V environment variable (repeatable)")
	fs.Var(&expose, "expose", "exposed port, PORT or PORT/PROTO (repeatable)")
	fs.Var(&labels, "label", "K=V image label (repeatable)")
	user := fs.String("user", "", "user to run as, preferably numeric UID[:GID]")
	workdir := fs.String("workdir", "", "working directory")
	platform := fs.String("platform", "linux/"+runtime.GOARCH, "OS/ARCH written into the image configuration")
	created := fs.String("created", "", "creation time, seconds since the epoch (default $SOURCE_DATE_EPOCH or 0)")
	output := fs.String("output", "", "docker-archive to write")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (entrypoint and cmd elements are given with repeated --entrypoint/--cmd)", fs.Args())
	}

	o := &options{
		layers:     layers,
		entrypoint: entrypoint,
		cmd:        cmd,
		user:       *user,
		workdir:    *workdir,
		output:     *output,
	}
	if len(tags) == 0 {
		return nil, errors.New("at least one --tag is required")
	}
	if o.output == "" {
		return nil, errors.New("--output is required")
	}
	for _, t := range tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return nil, fmt.Errorf("--tag %q: %w", t, err)
		}
		o.tags = append(o.tags, tag)
	}
	for _, l := range layers {
		if _, err := os.Stat(l); err != nil {
			return nil, fmt.Errorf("--layer: %w", err)
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		spec, err := parseFileSpec(f)
		if err != nil {
			return nil, err
		}
		if seen[spec.dst] {
			return nil, fmt.Errorf("--file %q: destination /%s given twice", f, spec.dst)
		}
		seen[spec.dst] = true
		o.files = append(o.files, spec)
	}
	for _, e := range env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want K=V", e)
		}
	}
	o.env = env
	for _, p := range expose {
		port, proto, hasProto := strings.Cut(p, "/")
		if !hasProto {
			proto = "tcp"
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return nil, fmt.Errorf("--expose %q: bad port", p)
		}
		if proto != "tcp" && proto != "udp" && proto != "sctp" {
			return nil, fmt.Errorf("--expose %q: protocol must be tcp, udp or sctp", p)
		}
		o.expose = append(o.expose, port+"/"+proto)
	}
	if len(labels) > 0 {
		o.labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--label %q: want K=V", l)
			}
			o.labels[k] = v
		}
	}
	var ok bool
	if o.osName, o.arch, ok = strings.Cut(*platform, "/"); !ok || o.osName == "" || o.arch == "" {
		return nil, fmt.Errorf("--platform %q: want OS/ARCH", *platform)
	}
	epoch := *created
	if epoch == "" {
		epoch = getenv("SOURCE_DATE_EPOCH")
	}
	if epoch == "" {
		epoch = "0"
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("creation time %q: want seconds since the epoch", epoch)
	}
	o.created = time.Unix(secs, 0).UTC()
	return o, nil
}

func parseFileSpec(s string) (fileSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return fileSpec{}, fmt.Errorf("--file %q: want SRC:DST[:MODE]", s)
	}
	if !path.IsAbs(parts[1]) {
		return fileSpec{}, fmt.Errorf("--file %q: DST must be absolute", s)
	}
	dst := strings.TrimPrefix(path.Clean(parts[1]), "/")
	if dst == "" {
		return fileSpec{}, fmt.Errorf("--file %q: DST cannot be /", s)
	}
	spec := fileSpec{src: parts[0], dst: dst, mode: -1}
	if len(parts) == 3 {
		m, err := strconv.ParseUint(parts[2], 8, 32)
		if err != nil || m > 0o7777 {
			return fileSpec{}, fmt.Errorf("--file %q: MODE must be octal, at most 7777", s)
		}
		spec.mode = int64(m)
	}
	return spec, nil
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	o, err := parseArgs(args, stderr, getenv)
	if err != nil {
		return err
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	if err := write(o, img); err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "id=%s\ndigest=%s\n", id, digest)
	return nil
}

// build assembles the image in memory; layer contents stay on disk until
// the archive is written.
func build(o *options) (v1.Image, error) {
	var adds []mutate.Addendum
	var layers []v1.Layer
	for _, p := range o.layers {
		// Caching the gzip in memory: otherwise an uncompressed input is
		// compressed twice, once for its digest and once for the archive.
		l, err := tarball.LayerFromFile(p, tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", p, err)
		}
		layers = append(layers, l)
		adds = append(adds, mutate.Addendum{
			Layer: l,
			History: v1.History{
				Created:   v1.Time{Time: o.created},
				CreatedBy: "mkimage --layer " + filepath.Base(p),
			},
		})
	}
	if len(o.files) > 0 {
		existing, err := scanLayers(layers)
		if err != nil {
			return nil, err
		}
		l, err := fileLayer(o.files, existing, o.created)
		if err != nil {
			return nil, err
		}
		dsts := make([]string, len(o.files))
		for i, f := range o.files {
			dsts[i] = "/" + f.dst
		}
		sort.Strings(dsts)
		adds = append(adds, mutate.Addendum{
			Layer: l,
			History: v1.History{
				Created:   v1.Time{Time: o.created},
				CreatedBy: "mkimage --file " + strings.Join(dsts, " "),
			},
		})
	}

	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	cfg := v1.Config{
		Entrypoint: o.entrypoint,
		Cmd:        o.cmd,
		Env:        o.env,
		User:       o.user,
		WorkingDir: o.workdir,
		Labels:     o.labels,
	}
	if len(o.expose) > 0 {
		cfg.ExposedPorts = map[string]struct{}{}
		for _, p := range o.expose {
			cfg.ExposedPorts[p] = struct{}{}
		}
	}
	if img, err = mutate.Config(img, cfg); err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: o.created}); err != nil {
		return nil, err
	}
	// The platform lives outside v1.Config; set it on the full config file,
	// which already carries the diff IDs of the layers appended above.
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = o.osName
	cf.Architecture = o.arch
	return mutate.ConfigFile(img, cf)
}

// scanLayers returns the type of every path the given layers leave in the
// image (later layers win, whiteouts remove), keyed by cleaned relative path.
func scanLayers(layers []v1.Layer) (map[string]byte, error) {
	types := map[string]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fmt.Errorf("reading layer: %w", err)
				}
				p := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
				dir, base := path.Split(p)
				if base == ".wh..wh..opq" {
					prefix := dir
					for k := range types {
						if strings.HasPrefix(k, prefix) {
							delete(types, k)
						}
					}
					continue
				}
				if strings.HasPrefix(base, ".wh.") {
					gone := dir + strings.TrimPrefix(base, ".wh.")
					delete(types, gone)
					for k := range types {
						if strings.HasPrefix(k, gone+"/") {
							delete(types, k)
						}
					}
					continue
				}
				types[p] = h.Typeflag
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	return types, nil
}

// fileLayer builds the --file layer in memory: entries sorted by path, owned
// by root, stamped with mtime, so its bytes depend only on the inputs.
func fileLayer(specs []fileSpec, existing map[string]byte, mtime time.Time) (v1.Layer, error) {
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	entries := map[string]entry{}
	isFile := map[string]bool{}
	for _, s := range specs {
		isFile[s.dst] = true
	}
	for _, s := range specs {
		if existing[s.dst] == tar.TypeDir {
			return nil, fmt.Errorf("--file %s: /%s is a directory in an earlier layer", s.src, s.dst)
		}
		for dir := path.Dir(s.dst); dir != "."; dir = path.Dir(dir) {
			if isFile[dir] {
				return nil, fmt.Errorf("--file %s: parent /%s is itself a --file destination", s.src, dir)
			}
			t, ok := existing[dir]
			switch {
			case !ok:
				entries[dir] = entry{hdr: &tar.Header{
					Typeflag: tar.TypeDir,
					Name:     dir + "/",
					Mode:     0o755,
					ModTime:  mtime,
					Uname:    "root",
					Gname:    "root",
				}}
			case t == tar.TypeDir:
				// Keep the earlier layer's owner and mode (think /tmp).
			case t == tar.TypeSymlink:
				return nil, fmt.Errorf("--file %s: parent /%s is a symlink in an earlier layer; use the path it resolves to", s.src, dir)
			default:
				return nil, fmt.Errorf("--file %s: parent /%s is not a directory in an earlier layer", s.src, dir)
			}
		}

		fi, err := os.Stat(s.src)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--file %s: not a regular file", s.src)
		}
		data, err := os.ReadFile(s.src)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		mode := s.mode
		if mode < 0 {
			mode = int64(fi.Mode().Perm())
			if fi.Mode()&os.ModeSetuid != 0 {
				mode |= 0o4000
			}
			if fi.Mode()&os.ModeSetgid != 0 {
				mode |= 0o2000
			}
			if fi.Mode()&os.ModeSticky != 0 {
				mode |= 0o1000
			}
		}
		entries[s.dst] = entry{
			hdr: &tar.Header{
				Typeflag: tar.TypeReg,
				Name:     s.dst,
				Mode:     mode,
				Size:     int64(len(data)),
				ModTime:  mtime,
				Uname:    "root",
				Gname:    "root",
			},
			data: data,
		}
	}

	// A parent path is a prefix of its children, so sorting puts every
	// directory before what it contains.
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		if err := tw.WriteHeader(e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}

// write replaces o.output atomically, so an interrupted build never leaves a
// truncated archive that a later import would trip over.
func write(o *options, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(o.output), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.output), "."+filepath.Base(o.output)+".*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName)

	refs := map[name.Reference]v1.Image{}
	for _, t := range o.tags {
		refs[t] = img
	}
	if err := tarball.MultiRefWriteToFile(tmpName, refs); err != nil {
		return fmt.Errorf("writing %s: %w", o.output, err)
	}
	if err := os.Chmod(tmpName, 0o644); err != nil {
		return err
	}
	return os.Rename(tmpName, o.output)
}
