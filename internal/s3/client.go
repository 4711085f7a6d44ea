package s3

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// DefaultPageSize is the keys [Client.ListPrefix] returns at most by
	// default: S3's own maximum of one listing request.
	DefaultPageSize = 1000
	// DefaultBatchSize is the keys one bulk delete of [Client.DeletePrefix]
	// removes at most by default: S3's maximum of one DeleteObjects.
	DefaultBatchSize = 1000
	// maxRetries bounds minio-go's retries of one request (its default is
	// 10, with backoff: a minute on a store that is down), so that a
	// caller's deadline, not the library, decides how long to wait.
	maxRetries = 3
	// dialTimeout bounds connecting to the store.
	dialTimeout = 10 * time.Second
)

// Client is a client of one [Location], confined to its prefix. It is
// safe for concurrent use.
type Client struct {
	loc  Location
	root string
	mc   *minio.Client
	// confirmed is whether the bucket has answered (confirmBucket).
	confirmed atomic.Bool
}

// dialFunc dials a store; tests replace it.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// New returns a client of loc, which must pass [Location.Validate]. It
// sends no request.
func New(loc Location) (*Client, error) {
	return newClient(loc, (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext)
}

func newClient(loc Location, dial dialFunc) (*Client, error) {
	if err := loc.Validate(); err != nil {
		return nil, err
	}
	u, err := parseEndpoint(loc.Endpoint)
	if err != nil {
		return nil, err
	}
	secure := u.Scheme == "https"
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3: %s: %w", loc, err)
	}
	tr.DialContext = dial
	tr.Proxy = nil // a store inside the cluster is never reached through a proxy
	if len(loc.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(loc.CABundle) // Validate checked it holds one
		tr.TLSClientConfig.RootCAs = pool
	}
	creds := credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	if c := loc.Credentials; c != nil {
		creds = credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, "")
	}
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Transport:    tr,
		Region:       loc.Region,
		BucketLookup: lookup,
		MaxRetries:   maxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %s: %w", loc, err)
	}
	return &Client{loc: loc, root: loc.Root(), mc: mc}, nil
}

// Location returns the client's location.
func (c *Client) Location() Location { return c.loc }

// ErrNoSuchBucket is the error of a call on a bucket that does not exist.
var ErrNoSuchBucket = errors.New("the bucket does not exist")

// fail wraps err, the store's answer to op on key (a key or a prefix, ""
// for the bucket), with what was asked of which bucket where, the store's
// error code, and a hint when the answer is one a misconfiguration gives.
func (c *Client) fail(op, key string, err error) error {
	what := fmt.Sprintf("bucket %s at %s", c.loc.Bucket, c.loc.Endpoint)
	if key != "" {
		what = fmt.Sprintf("%s in %s", key, what)
	}
	msg := fmt.Sprintf("s3: %s %s: ", op, what)
	// minio-go's errors show the store's message, not its code.
	if code := Code(err); code != "" && !strings.Contains(err.Error(), code) {
		msg += code + ": "
	}
	if hint := c.hint(err); hint != "" {
		return fmt.Errorf("%s%w (%s)", msg, err, hint)
	}
	return fmt.Errorf("%s%w", msg, err)
}

// hint says what a failure likely means, or "".
func (c *Client) hint(err error) string {
	var (
		dns  *net.DNSError
		resp minio.ErrorResponse
	)
	errors.As(err, &resp)
	switch code := Code(err); {
	// versitygw answers an unknown key with XAdminUserNotFound.
	case code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" || code == "XAdminUserNotFound":
		return fmt.Sprintf("the store refuses %s: check the credentials", c.loc.Credentials)
	case code == "AccessDenied" && c.loc.Credentials == nil:
		return "the request was sent without credentials"
	// A HEAD answer has no body to say more: a wrong secret shows so.
	case code == "AccessDenied":
		return fmt.Sprintf("the store refuses %s: check the credentials, and what the key may do", c.loc.Credentials)
	// What a store that wants path-style requests answers virtual-hosted
	// ones with (versitygw: 405 to HeadBucket, InvalidBucketName to a
	// put), when the bucket's host name resolves at all.
	case !c.loc.PathStyle && (errors.As(err, &dns) || resp.StatusCode == http.StatusMethodNotAllowed || code == "InvalidBucketName"):
		return "the request was virtual-hosted-style, the bucket in the host name: " +
			"stores inside a cluster (versitygw, MinIO, Ceph) need path-style addressing"
	}
	return ""
}

// Code returns the S3 error code of err ("NoSuchBucket", "AccessDenied",
// "SignatureDoesNotMatch", ...), or "" when err is not a store's answer.
func Code(err error) string {
	var resp minio.ErrorResponse
	switch {
	case errors.As(err, &resp):
		return resp.Code
	case errors.Is(err, ErrNoSuchBucket):
		return "NoSuchBucket"
	}
	return ""
}

// confirmBucket checks, once per client, that the bucket exists: a store
// addressed the wrong way (virtual-hosted requests to one that wants
// path-style ones) answers a listing with the list of its buckets, which
// reads as an empty listing, and IsEmpty and DeletePrefix must not take
// that for an empty prefix. Once the bucket has answered, the addressing
// is right, and a bucket deleted later makes the listings themselves fail.
func (c *Client) confirmBucket(ctx context.Context) error {
	if c.confirmed.Load() {
		return nil
	}
	ok, err := c.mc.BucketExists(ctx, c.loc.Bucket)
	switch {
	case err != nil:
		return c.fail("checking", "", err)
	case !ok:
		return c.fail("checking", "", ErrNoSuchBucket)
	}
	c.confirmed.Store(true)
	return nil
}

// EnsureBucket makes the location's bucket in its region unless it
// exists, and reports whether it made it. A bucket another account owns
// is an error.
func (c *Client) EnsureBucket(ctx context.Context) (created bool, err error) {
	exists, err := c.mc.BucketExists(ctx, c.loc.Bucket)
	if err != nil {
		return false, c.fail("checking", "", err)
	}
	if !exists {
		err = c.mc.MakeBucket(ctx, c.loc.Bucket, minio.MakeBucketOptions{Region: c.loc.Region})
		switch {
		case Code(err) == "BucketAlreadyOwnedByYou":
			// Made meanwhile by another caller.
		case err != nil:
			return false, c.fail("making", "", err)
		default:
			created = true
		}
	}
	c.confirmed.Store(true)
	return created, nil
}

// key returns the full key of name, a key relative to the location.
func (c *Client) key(name string) string { return c.root + strings.TrimLeft(name, "/") }

// prefix returns the full key prefix of a directory relative to the
// location ("" for all of it).
func (c *Client) prefix(rel string) string { return c.root + dir(rel) }

// Put writes data as the object name, relative to the location.
func (c *Client) Put(ctx context.Context, name string, data []byte) error {
	key := c.key(name)
	if key == c.root || strings.HasSuffix(key, "/") {
		return fmt.Errorf("s3: putting %q: not an object name", name)
	}
	_, err := c.mc.PutObject(ctx, c.loc.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{SendContentMd5: true, DisableMultipart: true})
	if err != nil {
		return c.fail("putting", key, err)
	}
	return nil
}

// ErrTooLarge is the error of a Get whose object is larger than asked.
var ErrTooLarge = errors.New("the object is larger than the most the caller reads")

// Get reads the object name, relative to the location, when it is at most
// limit bytes. An object that does not exist is an error whose Code is
// "NoSuchKey".
func (c *Client) Get(ctx context.Context, name string, limit int64) ([]byte, error) {
	key := c.key(name)
	o, err := c.mc.GetObject(ctx, c.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, c.fail("getting", key, err)
	}
	defer o.Close()
	data, err := io.ReadAll(io.LimitReader(o, limit+1))
	switch {
	case err != nil:
		return nil, c.fail("getting", key, err)
	case int64(len(data)) > limit:
		return nil, c.fail("getting", key, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit))
	}
	return data, nil
}

// CopyFrom copies the object srcKey (a full key) of the bucket srcBucket,
// in the same store, to name (relative to the location), server-side: the
// data never leaves the store. The client's credentials must read the
// source. An object of more than 5 GiB needs a multipart copy, which this
// does not do (MatrixOne writes far smaller objects).
func (c *Client) CopyFrom(ctx context.Context, srcBucket, srcKey, name string) error {
	key := c.key(name)
	_, err := c.mc.CopyObject(ctx, minio.CopyDestOptions{Bucket: c.loc.Bucket, Object: key},
		minio.CopySrcOptions{Bucket: srcBucket, Object: srcKey})
	if err != nil {
		return c.fail("copying "+srcBucket+"/"+srcKey+" to", key, err)
	}
	return nil
}

// copyPartSize is the part size of [Client.CopyTo]'s uploads: an object
// larger is uploaded in parts of it, one part in memory at a time.
const copyPartSize = 16 << 20

// CopyTo copies the object srcKey (a full key) of c's bucket to name
// (relative to dst's location) through this process, for two stores that
// cannot copy between themselves (CopyFrom): the object is streamed from
// one to the other, at most one part of copyPartSize in memory. It returns
// the bytes copied.
func (c *Client) CopyTo(ctx context.Context, srcKey string, dst *Client, name string) (int64, error) {
	key := dst.key(name)
	o, err := c.mc.GetObject(ctx, c.loc.Bucket, srcKey, minio.GetObjectOptions{})
	if err != nil {
		return 0, c.fail("getting", srcKey, err)
	}
	defer o.Close()
	info, err := o.Stat()
	if err != nil {
		return 0, c.fail("getting", srcKey, err)
	}
	// A plain reader, not the object's ReadAt: one ranged GET per part
	// would multiply the requests to the source.
	_, err = dst.mc.PutObject(ctx, dst.loc.Bucket, key, struct{ io.Reader }{o}, info.Size,
		minio.PutObjectOptions{PartSize: copyPartSize, NumThreads: 1})
	if err != nil {
		return 0, dst.fail("putting "+c.loc.Endpoint+" "+c.loc.Bucket+"/"+srcKey+" to", key, err)
	}
	return info.Size, nil
}

// SameStore reports whether a and b are at one endpoint, where
// [Client.CopyFrom] can copy between them (as [Overlaps] compares
// endpoints).
func SameStore(a, b Location) bool { return endpointKey(a.Endpoint) == endpointKey(b.Endpoint) }

// Object is an object listed.
type Object struct {
	// Key is the object's full key in the bucket.
	Key          string
	Size         int64
	LastModified time.Time
}

// ListOptions say which page [Client.ListPrefix] returns.
type ListOptions struct {
	// After is a full key: the page begins with the first key after it.
	// Empty: the first page.
	After string
	// PageSize is how many keys a page holds at most; 0 is
	// [DefaultPageSize].
	PageSize int
}

// Page is one page of a listing.
type Page struct {
	// Objects are the page's objects, in key order.
	Objects []Object
	// Next is what to pass as ListOptions.After for the next page: the
	// page's last key when the page is full, "" when the listing is done.
	// A full page may be the last: the page after it is then empty.
	Next string
}

// ListPrefix lists one page of the objects under prefix, a directory
// relative to the location ("" for all of it), in key order. It takes one
// request, and trusts the answer: see IsEmpty for a listing that a
// wrongly addressed store cannot fool.
func (c *Client) ListPrefix(ctx context.Context, prefix string, opts ListOptions) (Page, error) {
	size := opts.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	full := c.prefix(prefix)
	var page Page
	for o := range c.mc.ListObjectsIter(ctx, c.loc.Bucket, minio.ListObjectsOptions{
		Prefix: full, Recursive: true, MaxKeys: size, StartAfter: opts.After,
	}) {
		if o.Err != nil {
			return Page{}, c.fail("listing", full, o.Err)
		}
		page.Objects = append(page.Objects, Object{Key: o.Key, Size: o.Size, LastModified: o.LastModified})
		// Stopping at a full page keeps the iterator from asking for
		// the next one.
		if len(page.Objects) == size {
			page.Next = o.Key
			break
		}
	}
	// minio-go's iterator ends without an error when ctx does.
	if err := ctx.Err(); err != nil {
		return Page{}, c.fail("listing", full, err)
	}
	return page, nil
}

// IsEmpty reports whether no object lies under prefix, a directory
// relative to the location ("" for all of it). A bucket that does not
// exist is an error ([ErrNoSuchBucket]), not an empty prefix.
func (c *Client) IsEmpty(ctx context.Context, prefix string) (bool, error) {
	if err := c.confirmBucket(ctx); err != nil {
		return false, err
	}
	page, err := c.ListPrefix(ctx, prefix, ListOptions{PageSize: 1})
	if err != nil {
		return false, err
	}
	return len(page.Objects) == 0, nil
}

// DeleteOptions bound what one [Client.DeletePrefix] call does.
type DeleteOptions struct {
	// BatchSize is how many keys one bulk delete removes at most; 0 is
	// [DefaultBatchSize].
	BatchSize int
	// MaxBatches bounds the batches of one call, so that a controller
	// deletes a large prefix over several passes, recording progress in
	// between; 0 is no bound.
	MaxBatches int
}

// DeleteResult is what one [Client.DeletePrefix] call did.
type DeleteResult struct {
	// Batches is the number of bulk deletes sent.
	Batches int
	// Objects and Bytes are the objects deleted and their sizes (as
	// listed).
	Objects, Bytes int64
	// Done is whether the prefix was found empty: nothing is left.
	Done bool
}

// DeletePrefix deletes every object under prefix, a directory relative to
// the location ("" for all of it): it lists a batch from the start of the
// prefix, deletes it with one bulk request, and goes on until a listing
// finds nothing (Done), MaxBatches are sent, ctx ends or a delete fails.
// It is resumable: deleted keys are not listed again, so a later call
// picks up what is left, whatever stopped this one. The result counts
// what was deleted, also when an error is returned. A bucket that does not
// exist is an error ([ErrNoSuchBucket]).
func (c *Client) DeletePrefix(ctx context.Context, prefix string, opts DeleteOptions) (DeleteResult, error) {
	size := opts.BatchSize
	if size <= 0 {
		size = DefaultBatchSize
	}
	var res DeleteResult
	if err := c.confirmBucket(ctx); err != nil {
		return res, err
	}
	for opts.MaxBatches <= 0 || res.Batches < opts.MaxBatches {
		if err := ctx.Err(); err != nil {
			return res, c.fail("deleting", c.prefix(prefix), err)
		}
		page, err := c.ListPrefix(ctx, prefix, ListOptions{PageSize: size})
		if err != nil {
			return res, err
		}
		if len(page.Objects) == 0 {
			res.Done = true
			return res, nil
		}
		res.Batches++
		deleted, size, err := c.deleteBatch(ctx, page.Objects)
		res.Objects += deleted
		res.Bytes += size
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// deleteBatch deletes objects with bulk deletes (one, for a batch of up to
// 1000) and returns how many were deleted, their bytes, and the first
// failure. A key already gone counts as deleted, as S3 answers it.
func (c *Client) deleteBatch(ctx context.Context, objects []Object) (deleted, size int64, err error) {
	ch := make(chan minio.ObjectInfo, len(objects))
	sizes := make(map[string]int64, len(objects))
	for _, o := range objects {
		ch <- minio.ObjectInfo{Key: o.Key}
		sizes[o.Key] = o.Size
	}
	close(ch)
	var errs []error
	for r := range c.mc.RemoveObjectsWithResult(ctx, c.loc.Bucket, ch, minio.RemoveObjectsOptions{}) {
		if r.Err != nil {
			errs = append(errs, c.fail("deleting", r.ObjectName, r.Err))
			continue
		}
		deleted++
		size += sizes[r.ObjectName]
	}
	if len(errs) > 0 {
		return deleted, size, fmt.Errorf("%d of %d deletes failed, the first: %w", len(errs), len(objects), errs[0])
	}
	return deleted, size, nil
}
