package s3

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Location is a bucket and a key prefix in an S3-compatible store, and how
// to reach it.
type Location struct {
	// Endpoint is the store's URL, scheme://host[:port]: http or https.
	Endpoint string
	// Region is the bucket's region, signed into every request. Required:
	// without one a client asks the store for it first.
	Region string
	// Bucket is the bucket's name.
	Bucket string
	// KeyPrefix is the directory under the bucket the location holds;
	// slashes at either end mean nothing (MatrixOne's configuration trims
	// them too), and empty is the whole bucket.
	KeyPrefix string
	// PathStyle addresses the bucket in the URL's path
	// (http://host/bucket/key) rather than in the host name
	// (http://bucket.host/key): what stores inside a cluster (versitygw,
	// MinIO, Ceph) need, since no DNS name resolves bucket.host there.
	PathStyle bool
	// Credentials sign the requests; nil sends them unsigned (a bucket
	// whose policy allows anonymous access). A client never walks a
	// credential chain of its own: that would ask an instance-metadata
	// address outside the cluster.
	Credentials *Credentials
	// CABundle is PEM certificates trusted, besides the system's, for an
	// https endpoint.
	CABundle []byte
}

// Credentials are an access key.
type Credentials struct {
	AccessKeyID, SecretAccessKey string
}

// String shows which key signs, never the secret.
func (c *Credentials) String() string {
	if c == nil {
		return "anonymous"
	}
	return "access key " + c.AccessKeyID
}

// Root returns the location's prefix as a directory of keys: "" for the
// whole bucket, otherwise the prefix without slashes at its ends, then "/".
func (l Location) Root() string {
	return dir(l.KeyPrefix)
}

// String names the location as s3://bucket/prefix at the endpoint.
func (l Location) String() string {
	return fmt.Sprintf("s3://%s/%s at %s", l.Bucket, l.Root(), l.Endpoint)
}

// dir returns prefix as a directory: trimmed of slashes at its ends, then
// "/", or "" when nothing is left.
func dir(prefix string) string {
	if p := strings.Trim(prefix, "/"); p != "" {
		return p + "/"
	}
	return ""
}

// Validate checks what a client needs of l before any request: an
// endpoint it can dial, a region, a bucket name S3 takes, a key when
// credentials are given, a CA bundle that holds certificates, and
// path-style addressing for an endpoint that is an IP address (a bucket
// cannot be put in front of one as a host name).
func (l Location) Validate() error {
	var errs []error
	u, err := parseEndpoint(l.Endpoint)
	if err != nil {
		errs = append(errs, err)
	} else if !l.PathStyle && net.ParseIP(u.Hostname()) != nil {
		errs = append(errs, fmt.Errorf("endpoint %s is an IP address: virtual-hosted-style requests put the bucket in the host name, "+
			"which an address cannot carry; use path-style addressing", l.Endpoint))
	}
	if l.Region == "" {
		errs = append(errs, errors.New("no region"))
	}
	if why := BucketNameError(l.Bucket); why != "" {
		errs = append(errs, fmt.Errorf("bucket %q: %s", l.Bucket, why))
	}
	if c := l.Credentials; c != nil && (c.AccessKeyID == "" || c.SecretAccessKey == "") {
		errs = append(errs, errors.New("credentials without an access key ID or a secret access key"))
	}
	if len(l.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(l.CABundle) {
		errs = append(errs, errors.New("the CA bundle holds no PEM certificate"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("s3: location s3://%s/%s: %w", l.Bucket, l.Root(), err)
	}
	return nil
}

// parseEndpoint parses an endpoint URL: http or https, a host, nothing
// after it but a slash.
func parseEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("endpoint %q: the scheme must be http or https", endpoint)
	case u.Hostname() == "":
		return nil, fmt.Errorf("endpoint %q: no host", endpoint)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "":
		return nil, fmt.Errorf("endpoint %q: must be scheme://host[:port] only", endpoint)
	}
	return u, nil
}

// Overlaps reports whether a and b share a key: they name the same bucket
// at the same endpoint, and one's prefix equals the other's or contains it
// on a "/" boundary ("a" contains "a/b", not "ab"); an empty prefix
// contains the whole bucket. Slashes at a prefix's ends are ignored, as
// MatrixOne ignores them. Endpoints are the same when their hosts (any
// case, a trailing dot aside) and ports (a scheme's default port written
// or not) are: what the scheme is does not matter, since one server may
// serve both. Regions and credentials do not matter either.
func Overlaps(a, b Location) bool {
	if a.Bucket != b.Bucket || endpointKey(a.Endpoint) != endpointKey(b.Endpoint) {
		return false
	}
	pa, pb := a.Root(), b.Root()
	return strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)
}

// endpointKey is what tells two endpoints apart: host:port, the host in
// lower case without a trailing dot, the port the scheme's default when
// none is written. An endpoint that does not parse is its own key.
func endpointKey(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return strings.ToLower(strings.TrimRight(endpoint, "/"))
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port)
}

// BucketNameError says why name is not a bucket name by S3's rules
// (general purpose buckets), or "" when it is one: 3 to 63 characters of
// lower-case letters, digits, dots and hyphens, beginning and ending with
// a letter or digit, no two dots side by side, not an IP address, not
// beginning or ending as S3 reserves.
func BucketNameError(name string) string {
	switch {
	case len(name) < 3 || len(name) > 63:
		return "must have 3 to 63 characters"
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "":
		return "must have only lower-case letters, digits, dots and hyphens"
	case !isLowerAlnum(name[0]) || !isLowerAlnum(name[len(name)-1]):
		return "must begin and end with a letter or a digit"
	case strings.Contains(name, ".."):
		return "must not have two dots side by side"
	case net.ParseIP(name) != nil:
		return "must not be an IP address"
	}
	for _, prefix := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, prefix) {
			return fmt.Sprintf("must not begin with %q (S3 reserves it)", prefix)
		}
	}
	for _, suffix := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, suffix) {
			return fmt.Sprintf("must not end with %q (S3 reserves it)", suffix)
		}
	}
	return ""
}

func isLowerAlnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
