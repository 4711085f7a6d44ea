package matrixone

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// s3Clients keeps one S3 client per object (a BucketClaim, a Backup, a
// BackupJob's destination, a restoring LogSet's storage and backup), made
// again when its location or keys change, so that passes reuse connections.
type s3Clients struct {
	mu sync.Mutex
	m  map[types.UID]s3Client
}

type s3Client struct {
	key string
	c   *s3.Client
}

// get returns the client of the object uid at loc.
func (cc *s3Clients) get(uid types.UID, loc s3.Location) (*s3.Client, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%t\x00", loc.Endpoint, loc.Region, loc.Bucket, loc.KeyPrefix, loc.Credentials, loc.PathStyle)
	if loc.Credentials != nil {
		h.Write([]byte(loc.Credentials.SecretAccessKey))
	}
	h.Write(loc.CABundle)
	key := hex.EncodeToString(h.Sum(nil))
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cached, ok := cc.m[uid]; ok && cached.key == key {
		return cached.c, nil
	}
	cl, err := s3.New(loc)
	if err != nil {
		return nil, err
	}
	cc.m[uid] = s3Client{key: key, c: cl}
	return cl, nil
}

// forget drops the client of the object uid.
func (cc *s3Clients) forget(uid types.UID) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.m, uid)
}

func newS3Clients() *s3Clients { return &s3Clients{m: map[types.UID]s3Client{}} }

// forLocation returns the client of the object uid for the location spec
// in namespace, with the credentials Secret's keys and the CA Secret's
// certificates, both read from the API server (the manager caches only Steward's own Secrets); or why it cannot
// be made (a Secret or a key missing).
func (cc *s3Clients) forLocation(ctx context.Context, r client.Reader, namespace string, uid types.UID, spec mov1.S3Storage) (*s3.Client, string, error) {
	loc := claimLocation(spec)
	if name := spec.CredentialsSecret; name != "" {
		data, why, err := secretKeys(ctx, r, namespace, name, "credentials", build.EnvAccessKeyID, build.EnvSecretAccessKey)
		if why != "" || err != nil {
			return nil, why, err
		}
		loc.Credentials = &s3.Credentials{AccessKeyID: data[0], SecretAccessKey: data[1]}
	}
	if ca := spec.CASecret; ca != nil {
		data, why, err := secretKeys(ctx, r, namespace, ca.Name, "CA", cmp.Or(ca.Key, mov1.DefaultCAKey))
		if why != "" || err != nil {
			return nil, why, err
		}
		loc.CABundle = []byte(data[0])
	}
	if err := loc.Validate(); err != nil {
		return nil, err.Error(), nil
	}
	cl, err := cc.get(uid, loc)
	return cl, "", err
}

// secretKeys returns the values of keys of the Secret name, or why they
// cannot be read (the Secret or a key missing); what names the Secret's
// role in the message.
func secretKeys(ctx context.Context, r client.Reader, namespace, name, what string, keys ...string) ([]string, string, error) {
	var secret corev1.Secret
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &secret); {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("the %s Secret %s does not exist", what, name), nil
	case err != nil:
		return nil, "", fmt.Errorf("get the %s Secret %s: %w", what, name, err)
	}
	var values, missing []string
	for _, k := range keys {
		v := secret.Data[k]
		if len(v) == 0 {
			missing = append(missing, k)
		}
		values = append(values, string(v))
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("the %s Secret %s has no %s", what, name, strings.Join(missing, " and no ")), nil
	}
	return values, "", nil
}

// client is forLocation with why it cannot be made as an error.
func (cc *s3Clients) client(ctx context.Context, r client.Reader, namespace string, uid types.UID, spec mov1.S3Storage) (*s3.Client, error) {
	cl, why, err := cc.forLocation(ctx, r, namespace, uid, spec)
	if err == nil && why != "" {
		err = errors.New(why)
	}
	return cl, err
}

// deletePass deletes up to opts.ClaimDeleteBatches bulk deletes of the
// objects under cl's location, within claimS3Timeout: one pass of emptying
// a BucketClaim's prefix or a Backup's path. A bucket that does not exist
// holds nothing: the result is then Done.
func deletePass(ctx context.Context, cl *s3.Client, opts Options) (s3.DeleteResult, error) {
	sctx, cancel := context.WithTimeout(ctx, claimS3Timeout)
	defer cancel()
	res, err := cl.DeletePrefix(sctx, "", s3.DeleteOptions{BatchSize: opts.ClaimDeleteBatch, MaxBatches: opts.ClaimDeleteBatches})
	if errors.Is(err, s3.ErrNoSuchBucket) || s3.Code(err) == "NoSuchBucket" {
		res.Done, err = true, nil
	}
	return res, err
}
