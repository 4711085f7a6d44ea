package obsim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stewardhq/steward/internal/s3"
)

// dest is a backup or archive destination as OceanBase names one: a
// directory on a volume every server mounts (file:///path) or a prefix in
// an S3-compatible bucket
// (s3://bucket/prefix?host=...&access_id=...&access_key=...&s3_region=...,
// with addressing_model=path_style for a store inside the cluster). A host
// without a scheme is reached over plain HTTP, as OceanBase 4.x's S3 client
// does (its client configuration's scheme is HTTP; a host may name
// https:// itself). Names inside it are slash-separated.
type dest interface {
	put(ctx context.Context, name string, data []byte) error
	get(ctx context.Context, name string) ([]byte, error)
	// list returns the names under dir, recursively, sorted.
	list(ctx context.Context, dir string) ([]string, error)
}

// errNotFound: get of a name the destination does not hold.
var errNotFound = errors.New("no such file")

// parseDest reads a destination URI. The error says what is wrong without
// repeating the URI, which may carry a secret key.
func parseDest(uri string) (dest, error) {
	u, err := url.Parse(strings.TrimSpace(uri))
	if err != nil {
		return nil, errors.New("the destination is not a URI")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || !path.IsAbs(u.Path) || path.Clean(u.Path) == "/" {
			return nil, errors.New("a file destination is file:///absolute/directory")
		}
		return fileDest(path.Clean(u.Path)), nil
	case "s3":
		q := u.Query()
		host := q.Get("host")
		if host == "" || u.Host == "" {
			return nil, errors.New("an s3 destination is s3://bucket/prefix?host=HOST&access_id=ID&access_key=KEY&s3_region=REGION")
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		loc := s3.Location{Endpoint: host, Region: q.Get("s3_region"), Bucket: u.Host,
			KeyPrefix: strings.Trim(u.Path, "/"), PathStyle: q.Get("addressing_model") == "path_style"}
		if loc.Region == "" {
			loc.Region = "us-east-1"
		}
		if id := q.Get("access_id"); id != "" {
			loc.Credentials = &s3.Credentials{AccessKeyID: id, SecretAccessKey: q.Get("access_key")}
		}
		c, err := s3.New(loc)
		if err != nil {
			return nil, err
		}
		return s3Dest{c}, nil
	}
	return nil, fmt.Errorf("storage type %q is not supported: file:// or s3://", u.Scheme)
}

// displayDest is a destination URI without its access key, as OceanBase
// shows destinations in its views.
func displayDest(uri string) string {
	u, err := url.Parse(strings.TrimSpace(uri))
	if err != nil {
		return ""
	}
	q := u.Query()
	if q.Has("access_key") {
		q.Del("access_key")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

type fileDest string

func (d fileDest) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

func (d fileDest) put(_ context.Context, name string, data []byte) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (d fileDest) get(_ context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNotFound
	}
	return b, err
}

func (d fileDest) list(_ context.Context, dir string) ([]string, error) {
	var out []string
	root := d.path(dir)
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || e.IsDir() || strings.HasSuffix(p, ".tmp") {
			return err
		}
		rel, err := filepath.Rel(string(d), p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(out)
	return out, err
}

type s3Dest struct{ c *s3.Client }

// maxObject bounds what get reads: backup files of a simulated tenant are
// small.
const maxObject = 256 << 20

func (d s3Dest) put(ctx context.Context, name string, data []byte) error {
	if _, err := d.c.EnsureBucket(ctx); err != nil {
		return err
	}
	return d.c.Put(ctx, name, data)
}

func (d s3Dest) get(ctx context.Context, name string) ([]byte, error) {
	b, err := d.c.Get(ctx, name, maxObject)
	if s3.Code(err) == "NoSuchKey" {
		return nil, errNotFound
	}
	return b, err
}

func (d s3Dest) list(ctx context.Context, dir string) ([]string, error) {
	root := d.c.Location().Root()
	var out []string
	for after := ""; ; {
		page, err := d.c.ListPrefix(ctx, dir, s3.ListOptions{After: after})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			out = append(out, strings.TrimPrefix(o.Key, root))
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}
