package manager

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// certFilesRenewalCheck is how often the files are compared with the
// Secret once they hold a certificate: a renewal (months apart) reaches
// the webhook server within it.
const certFilesRenewalCheck = 30 * time.Second

// caCertKey is the CA's key in the rotator's Secret, and in cert-manager's,
// and the CA file's name in the certificate directory.
const caCertKey = "ca.crt"

// certFileWriter copies the serving certificate and key the rotator keeps
// in its Secret into the webhook server's certificate directory, an
// in-memory emptyDir in the chart.
//
// Mounting the Secret instead made a first install slow: the kubelet
// refreshes a Secret volume on its periodic pod sync (a minute or more
// after the rotator fills the Secret), and the rotator looks for the
// mounted files with an exponential backoff, so a replica became Ready
// 1m40s to 2m45s after it started on localkube. Written here, the files
// exist within a second of the Secret being filled.
type certFileWriter struct {
	reader client.Reader
	secret types.NamespacedName
	dir    string
}

// run polls the Secret every second until the files hold its
// certificate, then every certFilesRenewalCheck, until ctx ends. Errors
// are logged and retried: the rotator's readiness gate keeps the replica
// unready meanwhile. Every replica runs it (everyReplica): each serves
// webhooks.
func (w *certFileWriter) run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("secret", w.secret, "dir", w.dir)
	for {
		wait := time.Second
		written, err := w.sync(ctx)
		switch {
		case err != nil:
			log.Error(err, "Cannot write the webhook certificate files")
		case written:
			wait = certFilesRenewalCheck
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// sync writes the Secret's CA, key and certificate into dir where they
// differ from the files, the certificate last (the rotator waits for that
// file; the readiness check verifies it with the CA), and reports whether the files now hold them. A Secret without
// them yet (the rotator has not filled it) is not an error.
func (w *certFileWriter) sync(ctx context.Context) (bool, error) {
	var s corev1.Secret
	if err := w.reader.Get(ctx, w.secret, &s); err != nil {
		return false, fmt.Errorf("get the webhook certificate Secret: %w", err)
	}
	ca, key, cert := s.Data[caCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data[corev1.TLSCertKey]
	if len(ca) == 0 || len(key) == 0 || len(cert) == 0 {
		return false, nil
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{caCertKey, ca}, {corev1.TLSPrivateKeyKey, key}, {corev1.TLSCertKey, cert}} {
		if err := writeIfChanged(filepath.Join(w.dir, f.name), f.data); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeIfChanged replaces path with data, owner-readable only, unless it
// holds data already. The rename makes the change atomic for the webhook
// server's certificate watcher.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op after the rename
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
