package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/s3"
	"github.com/stewardhq/steward/internal/s3/s3test"
)

// The client against a real store: versitygw (internal/s3/s3test).

func newClient(t *testing.T, loc s3.Location) *s3.Client {
	t.Helper()
	c, err := s3.New(loc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// put writes each name with its name as content.
func put(ctx context.Context, t *testing.T, c *s3.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := c.Put(ctx, n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
}

// names returns n names prefix-00, prefix-01, ...
func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return out
}

// listAll lists prefix page by page and returns the keys and the pages'
// sizes.
func listAll(ctx context.Context, t *testing.T, c *s3.Client, prefix string, size int) (keys []string, pages []int) {
	t.Helper()
	after := ""
	for {
		page, err := c.ListPrefix(ctx, prefix, s3.ListOptions{After: after, PageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(page.Objects))
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		if page.Next == "" {
			return keys, pages
		}
		after = page.Next
		if len(pages) > 100 {
			t.Fatal("the listing does not end")
		}
	}
}

func TestEnsureBucket(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	c := newClient(t, srv.Location("mo-data", "team/c1"))
	for i, want := range []bool{true, false} {
		created, err := c.EnsureBucket(ctx)
		if err != nil || created != want {
			t.Fatalf("EnsureBucket #%d = %t, %v; want %t", i+1, created, err, want)
		}
	}
	// The POSIX backend made it a directory.
	if fi, err := os.Stat(filepath.Join(srv.Root(), "mo-data")); err != nil || !fi.IsDir() {
		t.Errorf("the bucket's directory: %v", err)
	}
}

// TestListPrefix pages through a prefix with pages smaller than it, and
// checks that the listing holds that directory's keys only.
func TestListPrefix(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	c := newClient(t, srv.Location("mo-data", "team/c1"))
	if _, err := c.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	a := names("a/obj", 7)
	put(ctx, t, c, a...)
	put(ctx, t, c, "ab/not-in-a", "b/obj")
	// Another location's keys, beside this one's.
	put(ctx, t, newClient(t, srv.Location("mo-data", "team/c10")), "a/obj-00")

	keys, pages := listAll(ctx, t, c, "a", 3)
	var want []string
	for _, n := range a {
		want = append(want, "team/c1/"+n)
	}
	if !slices.Equal(keys, want) {
		t.Errorf("listed %v, want %v", keys, want)
	}
	if !slices.Equal(pages, []int{3, 3, 1}) {
		t.Errorf("pages of %v objects, want 3, 3, 1", pages)
	}
	// A page that ends the listing exactly is followed by an empty one.
	if _, pages := listAll(ctx, t, c, "a", 7); !slices.Equal(pages, []int{7, 0}) {
		t.Errorf("pages of 7: %v, want 7, 0", pages)
	}
	// The whole location: a, ab, b, not c10's.
	if keys, _ := listAll(ctx, t, c, "", 0); len(keys) != 9 {
		t.Errorf("the location holds %d keys, want 9: %v", len(keys), keys)
	}
	// Objects carry their sizes.
	page, err := c.ListPrefix(ctx, "b", s3.ListOptions{})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Size != int64(len("b/obj")) || page.Objects[0].LastModified.IsZero() {
		t.Errorf("ListPrefix(b) = %+v, %v", page, err)
	}
}

// TestDeletePrefix deletes a location in bounded calls and checks that
// nothing beside it goes: not a sibling whose name it begins, not another
// prefix.
func TestDeletePrefix(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	c1 := newClient(t, srv.Location("mo-data", "team/c1"))
	c10 := newClient(t, srv.Location("mo-data", "team/c10"))
	c2 := newClient(t, srv.Location("mo-data", "team/c2"))
	if _, err := c1.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	put(ctx, t, c1, append(names("data/obj", 18), names("etl/obj", 7)...)...)
	put(ctx, t, c10, names("data/obj", 3)...)
	put(ctx, t, c2, names("data/obj", 2)...)

	// Two batches of 10, then stop: resumable.
	res, err := c1.DeletePrefix(ctx, "", s3.DeleteOptions{BatchSize: 10, MaxBatches: 2})
	// In key order: the 18 data/obj-NN (11 bytes each), then etl/obj-00
	// and -01 (10).
	if err != nil || res.Batches != 2 || res.Objects != 20 || res.Done || res.Bytes != 18*11+2*10 {
		t.Fatalf("DeletePrefix (2 batches) = %+v, %v; want 20 objects of 218 bytes, not done", res, err)
	}
	if empty, err := c1.IsEmpty(ctx, ""); err != nil || empty {
		t.Fatalf("IsEmpty after 20 of 25 = %t, %v", empty, err)
	}
	// The rest, then a listing that finds nothing.
	res, err = c1.DeletePrefix(ctx, "", s3.DeleteOptions{BatchSize: 10})
	if err != nil || res.Batches != 1 || res.Objects != 5 || !res.Done {
		t.Fatalf("DeletePrefix (the rest) = %+v, %v; want 5 objects, done", res, err)
	}
	if empty, err := c1.IsEmpty(ctx, ""); err != nil || !empty {
		t.Errorf("IsEmpty after deleting = %t, %v", empty, err)
	}
	// Deleting an empty prefix is done at once.
	if res, err := c1.DeletePrefix(ctx, "", s3.DeleteOptions{}); err != nil || !res.Done || res.Batches != 0 {
		t.Errorf("DeletePrefix (empty) = %+v, %v", res, err)
	}
	for name, c := range map[string]*s3.Client{"team/c10": c10, "team/c2": c2} {
		if keys, _ := listAll(ctx, t, c, "", 0); len(keys) == 0 {
			t.Errorf("%s lost its objects", name)
		}
	}

	// A prefix within the location: data only.
	put(ctx, t, c2, "etl/obj")
	if res, err := c2.DeletePrefix(ctx, "data", s3.DeleteOptions{}); err != nil || res.Objects != 2 || !res.Done {
		t.Errorf("DeletePrefix(data) = %+v, %v", res, err)
	}
	if empty, err := c2.IsEmpty(ctx, "etl"); err != nil || empty {
		t.Errorf("IsEmpty(etl) after deleting data = %t, %v", empty, err)
	}

	// A context that has ended deletes nothing and says so.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if res, err := c10.DeletePrefix(done, "", s3.DeleteOptions{}); !errors.Is(err, context.Canceled) || res.Objects != 0 {
		t.Errorf("DeletePrefix(canceled) = %+v, %v", res, err)
	}
}

// TestRefusals checks the errors of a misconfigured client: each names
// the bucket and endpoint, the store's error code, and a hint.
func TestRefusals(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	good := srv.Location("mo-data", "")
	if _, err := newClient(t, good).EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("a wrong secret", func(t *testing.T) {
		loc := good
		loc.Credentials = &s3.Credentials{AccessKeyID: good.Credentials.AccessKeyID, SecretAccessKey: "wrong-secret"}
		c := newClient(t, loc)
		_, err := c.ListPrefix(ctx, "", s3.ListOptions{})
		checkErr(t, err, "SignatureDoesNotMatch", "listing bucket mo-data at "+srv.Endpoint(), "check the credentials")
		// HeadBucket's answer has no body: a plain 403.
		_, err2 := c.IsEmpty(ctx, "")
		checkErr(t, err2, "AccessDenied", "checking bucket mo-data", "refuses access key "+loc.Credentials.AccessKeyID+": check the credentials")
		for _, err := range []error{err, err2} {
			if strings.Contains(err.Error(), "wrong-secret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		}
	})
	t.Run("an unknown key", func(t *testing.T) {
		loc := good
		loc.Credentials = &s3.Credentials{AccessKeyID: "NOSUCHKEY", SecretAccessKey: "x"}
		_, err := newClient(t, loc).EnsureBucket(ctx)
		// versitygw's code for it; S3's is InvalidAccessKeyId.
		checkErr(t, err, "XAdminUserNotFound", "refuses access key NOSUCHKEY: check the credentials")
	})
	t.Run("no credentials", func(t *testing.T) {
		loc := good
		loc.Credentials = nil
		_, err := newClient(t, loc).IsEmpty(ctx, "")
		checkErr(t, err, "AccessDenied", "sent without credentials")
	})
	t.Run("no such bucket", func(t *testing.T) {
		c := newClient(t, srv.Location("no-such-bucket", ""))
		_, err := c.IsEmpty(ctx, "")
		checkErr(t, err, "NoSuchBucket", "checking bucket no-such-bucket")
		if !errors.Is(err, s3.ErrNoSuchBucket) {
			t.Errorf("%v is not ErrNoSuchBucket", err)
		}
		_, err = c.DeletePrefix(ctx, "", s3.DeleteOptions{})
		checkErr(t, err, "NoSuchBucket", "checking bucket no-such-bucket")
		_, err = c.ListPrefix(ctx, "", s3.ListOptions{})
		checkErr(t, err, "NoSuchBucket", "listing bucket no-such-bucket")
	})
	t.Run("a context that has ended", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		c := newClient(t, good)
		if _, err := c.ListPrefix(done, "", s3.ListOptions{}); !errors.Is(err, context.Canceled) {
			t.Errorf("ListPrefix: %v, want context.Canceled", err)
		}
		if _, err := c.IsEmpty(done, ""); !errors.Is(err, context.Canceled) {
			t.Errorf("IsEmpty: %v, want context.Canceled", err)
		}
	})
	t.Run("virtual-hosted style", func(t *testing.T) {
		// A host name the bucket can go in front of, reaching the server
		// as a cluster's DNS would if it resolved mo-data.localhost.
		u, err := url.Parse(srv.Endpoint())
		if err != nil {
			t.Fatal(err)
		}
		loc := good
		loc.Endpoint, loc.PathStyle = "http://localhost:"+u.Port(), false
		c, err := s3.NewDialing(loc, u.Host)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.EnsureBucket(ctx)
		checkErr(t, err, "", "checking bucket mo-data", "405", "need path-style addressing")
		// The store answers a listing with its list of buckets, which
		// reads as an empty listing: IsEmpty and DeletePrefix check the
		// bucket first, and are not fooled.
		_, err = c.IsEmpty(ctx, "")
		checkErr(t, err, "", "need path-style addressing")
		_, err = c.DeletePrefix(ctx, "", s3.DeleteOptions{})
		checkErr(t, err, "", "need path-style addressing")
		err = c.Put(ctx, "x", []byte("x"))
		checkErr(t, err, "InvalidBucketName", "need path-style addressing")
	})
}

// checkErr checks that err has the S3 code (if any) and every want.
func checkErr(t *testing.T, err error, code string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if code != "" && s3.Code(err) != code {
		t.Errorf("Code(%v) = %q, want %q", err, s3.Code(err), code)
	}
	for _, w := range append(want, code) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

// TestTLS reaches a store over HTTPS with its CA bundle, and fails to
// without it.
func TestTLS(t *testing.T) {
	srv := s3test.Start(t, s3test.WithTLS())
	ctx := testContext(t)
	loc := srv.Location("mo-data", "")
	if created, err := newClient(t, loc).EnsureBucket(ctx); err != nil || !created {
		t.Fatalf("EnsureBucket over TLS with the CA = %t, %v", created, err)
	}
	loc.CABundle = nil
	_, err := newClient(t, loc).EnsureBucket(ctx)
	checkErr(t, err, "", "certificate signed by unknown authority")
}

func TestGet(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	c := newClient(t, srv.Location("mo-backups", "ns/b1"))
	if _, err := c.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	put(ctx, t, c, "tae/tae_sum")
	got, err := c.Get(ctx, "tae/tae_sum", 64)
	if err != nil || string(got) != "tae/tae_sum" {
		t.Fatalf("Get = %q, %v; want the object's content", got, err)
	}
	_, err = c.Get(ctx, "tae/tae_sum", 4)
	if !errors.Is(err, s3.ErrTooLarge) {
		t.Errorf("Get with a 4-byte limit of an 11-byte object: %v, want ErrTooLarge", err)
	}
	_, err = c.Get(ctx, "tae/no_such", 64)
	checkErr(t, err, "NoSuchKey", "getting ns/b1/tae/no_such in bucket mo-backups")
}

func TestCopyFrom(t *testing.T) {
	srv := s3test.Start(t)
	ctx := testContext(t)
	src := newClient(t, srv.Location("mo-backups", "ns/b1"))
	dst := newClient(t, srv.Location("mo-data", "ns/restored"))
	for _, c := range []*s3.Client{src, dst} {
		if _, err := c.EnsureBucket(ctx); err != nil {
			t.Fatal(err)
		}
	}
	put(ctx, t, src, "tae/ckp/meta_0-0_1-0.ckp")
	if err := dst.CopyFrom(ctx, "mo-backups", "ns/b1/tae/ckp/meta_0-0_1-0.ckp", "data/ckp/meta_0-0_1-0.ckp"); err != nil {
		t.Fatal(err)
	}
	got, err := dst.Get(ctx, "data/ckp/meta_0-0_1-0.ckp", 64)
	if err != nil || string(got) != "tae/ckp/meta_0-0_1-0.ckp" {
		t.Errorf("the copy holds %q, %v; want the source's content", got, err)
	}
	err = dst.CopyFrom(ctx, "mo-backups", "ns/b1/no-such", "data/x")
	checkErr(t, err, "NoSuchKey", "copying mo-backups/ns/b1/no-such to ns/restored/data/x in bucket mo-data")
}

func TestCopyToAnotherStore(t *testing.T) {
	one, two := s3test.Start(t), s3test.Start(t)
	ctx := testContext(t)
	src := newClient(t, one.Location("mo-backups", "ns/b1"))
	dst := newClient(t, two.Location("mo-data", "ns/restored"))
	for _, c := range []*s3.Client{src, dst} {
		if _, err := c.EnsureBucket(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s3.SameStore(src.Location(), dst.Location()) {
		t.Fatalf("%s and %s: want two stores", src.Location(), dst.Location())
	}
	// One object smaller than a part, one of three parts and a bit: the
	// second goes up as a multipart upload.
	small := []byte("tae/ckp/meta_0-0_1-0.ckp")
	large := make([]byte, 3*s3.CopyPartSize+12345)
	for i := range large {
		large[i] = byte(i * 7)
	}
	for name, data := range map[string][]byte{"tae/ckp/meta": small, "tae/large": large} {
		if err := src.Put(ctx, name, data); err != nil {
			t.Fatal(err)
		}
		n, err := src.CopyTo(ctx, "ns/b1/"+name, dst, "data/"+name)
		if err != nil || n != int64(len(data)) {
			t.Fatalf("copying %s: %d bytes, %v; want %d", name, n, err, len(data))
		}
		got, err := dst.Get(ctx, "data/"+name, int64(len(data)))
		if err != nil || string(got) != string(data) {
			t.Errorf("the copy of %s holds %d bytes, %v; want the source's %d", name, len(got), err, len(data))
		}
	}
	_, err := src.CopyTo(ctx, "ns/b1/no-such", dst, "data/x")
	checkErr(t, err, "NoSuchKey", "getting ns/b1/no-such in bucket mo-backups")
}
