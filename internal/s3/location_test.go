package s3

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestOverlaps(t *testing.T) {
	at := func(endpoint, bucket, prefix string) Location {
		return Location{Endpoint: endpoint, Bucket: bucket, KeyPrefix: prefix, Region: "r"}
	}
	const e = "http://s3.steward-s3.svc:7070"
	for _, tc := range []struct {
		name string
		a, b Location
		want bool
	}{
		{"the same prefix", at(e, "mo", "team/c1"), at(e, "mo", "team/c1"), true},
		{"one contains the other", at(e, "mo", "team"), at(e, "mo", "team/c1"), true},
		{"contained, either way round", at(e, "mo", "team/c1/data"), at(e, "mo", "team"), true},
		{"a sibling that shares characters, not a directory", at(e, "mo", "team/c1"), at(e, "mo", "team/c10"), false},
		{"siblings", at(e, "mo", "team/c1"), at(e, "mo", "team/c2"), false},
		{"trailing slashes mean nothing", at(e, "mo", "team/c1/"), at(e, "mo", "team/c1"), true},
		{"leading slashes mean nothing", at(e, "mo", "/team"), at(e, "mo", "team/c1"), true},
		{"an empty prefix holds the whole bucket", at(e, "mo", ""), at(e, "mo", "team/c1"), true},
		{"a prefix of slashes is empty", at(e, "mo", "/"), at(e, "mo", "x"), true},
		{"two empty prefixes", at(e, "mo", ""), at(e, "mo", ""), true},
		{"another bucket", at(e, "mo", ""), at(e, "mo2", ""), false},
		{"another endpoint", at(e, "mo", "x"), at("http://other:7070", "mo", "x"), false},
		{"another port", at(e, "mo", "x"), at("http://s3.steward-s3.svc:7071", "mo", "x"), false},
		{"the host's case and a trailing dot", at("http://S3.Steward-S3.svc.:7070/", "mo", "x"), at(e, "mo", "x"), true},
		{"a default port written or not", at("https://s3.example.com", "mo", "x"), at("https://s3.example.com:443", "mo", "x"), true},
		{"http's default port", at("http://s3.example.com:80", "mo", "x"), at("http://s3.example.com", "mo", "x"), true},
		{"the scheme does not matter when the ports agree", at("http://s3:9000", "mo", "x"), at("https://s3:9000", "mo", "x"), true},
		{"regions and credentials do not matter", Location{Endpoint: e, Bucket: "mo", Region: "a"},
			Location{Endpoint: e, Bucket: "mo", Region: "b", Credentials: &Credentials{"k", "s"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Overlaps(tc.a, tc.b); got != tc.want {
				t.Errorf("Overlaps(%v, %v) = %t, want %t", tc.a, tc.b, got, tc.want)
			}
			if got := Overlaps(tc.b, tc.a); got != tc.want {
				t.Errorf("Overlaps(%v, %v) = %t (swapped), want %t", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestRoot(t *testing.T) {
	for prefix, want := range map[string]string{"": "", "/": "", "a": "a/", "a/b/": "a/b/", "//a/b//": "a/b/"} {
		if got := (Location{KeyPrefix: prefix}).Root(); got != want {
			t.Errorf("Root of %q = %q, want %q", prefix, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := Location{Endpoint: "http://s3:7070", Region: "us-east-1", Bucket: "mo-data", PathStyle: true}
	for _, tc := range []struct {
		name   string
		modify func(l *Location)
		want   string // in the error; empty: valid
	}{
		{"valid", func(*Location) {}, ""},
		{"virtual-hosted on a name", func(l *Location) { l.PathStyle = false }, ""},
		{"https with a CA", func(l *Location) { l.Endpoint, l.CABundle = "https://s3", testCA(t) }, ""},
		{"credentials", func(l *Location) { l.Credentials = &Credentials{"key", "secret"} }, ""},
		{"no scheme", func(l *Location) { l.Endpoint = "s3:7070" }, "the scheme must be http or https"},
		{"another scheme", func(l *Location) { l.Endpoint = "ftp://s3" }, "the scheme must be http or https"},
		{"no host", func(l *Location) { l.Endpoint = "http://:7070" }, "no host"},
		{"a path", func(l *Location) { l.Endpoint = "http://s3/mo" }, "scheme://host[:port] only"},
		{"virtual-hosted on an address", func(l *Location) { l.Endpoint, l.PathStyle = "http://10.0.0.1:7070", false },
			"virtual-hosted-style requests put the bucket in the host name"},
		{"no region", func(l *Location) { l.Region = "" }, "no region"},
		{"a bucket S3 refuses", func(l *Location) { l.Bucket = "Mo-data" }, `bucket "Mo-data": must have only lower-case`},
		{"no secret", func(l *Location) { l.Credentials = &Credentials{AccessKeyID: "key"} }, "without an access key ID or a secret"},
		{"a CA bundle without a certificate", func(l *Location) { l.CABundle = []byte("not PEM") }, "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := valid
			tc.modify(&l)
			err := l.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
			// New refuses what Validate refuses, and sends nothing.
			if _, err := New(l); (err == nil) != (tc.want == "") {
				t.Errorf("New: %v", err)
			}
		})
	}
}

func TestBucketNameError(t *testing.T) {
	for name, want := range map[string]string{
		"mo":                    "3 to 63 characters",
		strings.Repeat("a", 64): "3 to 63 characters",
		"mo-data.2":             "",
		"Mo-data":               "only lower-case letters",
		"mo_data":               "only lower-case letters",
		"-mo":                   "begin and end with a letter or a digit",
		"mo.":                   "begin and end with a letter or a digit",
		"mo..data":              "two dots",
		"10.0.0.1":              "IP address",
		"xn--mo":                `begin with "xn--"`,
		"mo-s3alias":            `end with "-s3alias"`,
	} {
		if got := BucketNameError(name); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("BucketNameError(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestKeys checks that a client stays under its location: relative names
// and prefixes become keys under the location's prefix, as directories.
func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		keyPrefix, rel, key, prefix string
	}{
		{"team/c1", "data/x", "team/c1/data/x", "team/c1/data/x/"},
		{"/team/c1/", "/data/x", "team/c1/data/x", "team/c1/data/x/"},
		{"team/c1", "", "team/c1/", "team/c1/"},
		{"", "data", "data", "data/"},
		{"", "", "", ""},
	} {
		c, err := New(Location{Endpoint: "http://s3", Region: "r", Bucket: "mo-data", KeyPrefix: tc.keyPrefix})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.key(tc.rel); got != tc.key {
			t.Errorf("prefix %q: key(%q) = %q, want %q", tc.keyPrefix, tc.rel, got, tc.key)
		}
		if got := c.prefix(tc.rel); got != tc.prefix {
			t.Errorf("prefix %q: prefix(%q) = %q, want %q", tc.keyPrefix, tc.rel, got, tc.prefix)
		}
	}
}

// TestErrors checks Code and the hints a failure gets, and that no error
// shows a secret.
func TestErrors(t *testing.T) {
	loc := Location{Endpoint: "http://s3:7070", Region: "r", Bucket: "mo-data", PathStyle: true,
		Credentials: &Credentials{AccessKeyID: "AKEY", SecretAccessKey: "very-secret"}}
	virtual := loc
	virtual.PathStyle = false
	anonymous := loc
	anonymous.Credentials = nil
	s3err := func(code string) error { return minio.ErrorResponse{Code: code, Message: code + "."} }
	for _, tc := range []struct {
		name string
		loc  Location
		err  error
		want []string
		not  []string
	}{
		{"a wrong secret", loc, s3err("SignatureDoesNotMatch"),
			[]string{"s3: listing team/ in bucket mo-data at http://s3:7070", "SignatureDoesNotMatch", "refuses access key AKEY: check the credentials"},
			[]string{"very-secret"}},
		{"an unknown key", loc, s3err("InvalidAccessKeyId"), []string{"check the credentials"}, nil},
		{"denied without credentials", anonymous, s3err("AccessDenied"), []string{"sent without credentials"}, nil},
		{"denied with credentials", loc, s3err("AccessDenied"), []string{"AccessDenied", "refuses access key AKEY: check the credentials, and what the key may do"}, nil},
		{"no such bucket", loc, s3err("NoSuchBucket"), []string{"NoSuchBucket"}, []string{"("}},
		{"no such bucket, Steward's", loc, ErrNoSuchBucket, []string{"NoSuchBucket: the bucket does not exist"}, []string{"("}},
		{"a code its message does not show", loc, minio.ErrorResponse{Code: "SlowDown", Message: "Reduce your rate."},
			[]string{"SlowDown: Reduce your rate."}, nil},
		{"virtual-hosted, 405", virtual, minio.ErrorResponse{Code: "405 Method Not Allowed", StatusCode: 405},
			[]string{"need path-style addressing"}, nil},
		{"path-style, 405", loc, minio.ErrorResponse{Code: "405 Method Not Allowed", StatusCode: 405}, nil, []string{"path-style"}},
		{"virtual-hosted, no such host", virtual, &net.DNSError{Err: "no such host", Name: "mo.s3", IsNotFound: true},
			[]string{"no such host", "need path-style addressing"}, nil},
		{"path-style, no such host", loc, &net.DNSError{Err: "no such host", Name: "s3", IsNotFound: true},
			[]string{"no such host"}, []string{"path-style"}},
		{"not an S3 answer", loc, errors.New("boom"), []string{"boom"}, []string{"("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			got := c.fail("listing", "team/", tc.err)
			if !errors.Is(got, tc.err) && Code(got) != Code(tc.err) {
				t.Errorf("%v does not wrap %v", got, tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got.Error(), n) {
					t.Errorf("%q has %q", got, n)
				}
			}
		})
	}
	if got := Code(errors.New("x")); got != "" {
		t.Errorf("Code of a plain error = %q", got)
	}
}

// testCA returns a self-signed CA certificate, PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
