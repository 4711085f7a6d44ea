package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stewardhq/steward/internal/systems"
)

// Defaults for the flags in [WebhookOptions]. The names match the objects
// the Helm chart creates for a release named "steward".
const (
	DefaultWebhookPort              = 9443
	DefaultWebhookCertDir           = "/tmp/k8s-webhook-server/serving-certs"
	DefaultWebhookServiceName       = "steward-webhook"
	DefaultWebhookSecretName        = "steward-webhook-cert"
	DefaultWebhookConfigurationName = "steward"
)

// WebhookOptions configures the admission webhook server and its serving
// certificate.
type WebhookOptions struct {
	// Enabled serves the selected systems' admission webhooks.
	Enabled bool
	// Port is the webhook server's HTTPS port.
	Port int
	// CertDir holds tls.crt and tls.key. With CertRotation the manager
	// writes them there from the Secret (certFileWriter), so it must be
	// writable (the chart mounts an in-memory emptyDir); without, the chart
	// mounts cert-manager's Secret there.
	CertDir string

	// CertRotation makes the manager provision its own CA and serving
	// certificate into the Secret SecretName, renew them before they
	// expire, and inject the CA into the webhook configurations named
	// ConfigurationName. Off, something else (cert-manager) fills CertDir
	// and the CA bundles.
	CertRotation bool
	// Namespace is the manager's namespace: the Secret's and the Service's.
	// Defaults to $POD_NAMESPACE.
	Namespace string
	// ServiceName is the Service in front of the webhook server; the
	// certificate is issued for its cluster DNS names.
	ServiceName string
	// SecretName is the Secret that keeps the CA and serving certificate.
	SecretName string
	// ConfigurationName is the name of both the Mutating- and the
	// ValidatingWebhookConfiguration whose CA bundles are injected.
	ConfigurationName string
}

// NewWebhookOptions returns the webhook defaults: enabled, with the manager
// rotating its own certificate.
func NewWebhookOptions() WebhookOptions {
	return WebhookOptions{
		Enabled:           true,
		Port:              DefaultWebhookPort,
		CertDir:           DefaultWebhookCertDir,
		CertRotation:      true,
		Namespace:         os.Getenv("POD_NAMESPACE"),
		ServiceName:       DefaultWebhookServiceName,
		SecretName:        DefaultWebhookSecretName,
		ConfigurationName: DefaultWebhookConfigurationName,
	}
}

// BindFlags registers the webhook flags on fs.
func (o *WebhookOptions) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "webhooks", o.Enabled, "Serve the admission webhooks of the selected systems.")
	fs.IntVar(&o.Port, "webhook-port", o.Port, "Port of the admission webhook server (HTTPS).")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir, "Directory holding the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&o.CertRotation, "webhook-cert-rotation", o.CertRotation,
		"Provision and renew the webhook serving certificate in --webhook-secret-name and inject its CA into the webhook configurations; "+
			"turn off when cert-manager (or another issuer) does both.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace Steward runs in (the webhook Secret's and Service's); defaults to $POD_NAMESPACE.")
	fs.StringVar(&o.ServiceName, "webhook-service-name", o.ServiceName, "Service in front of the webhook server; the certificate names it.")
	fs.StringVar(&o.SecretName, "webhook-secret-name", o.SecretName, "Secret that keeps the webhook CA and serving certificate.")
	fs.StringVar(&o.ConfigurationName, "webhook-configuration-name", o.ConfigurationName,
		"Name of the Mutating- and ValidatingWebhookConfiguration to inject the CA bundle into.")
}

func (o *WebhookOptions) validate() []error {
	if !o.Enabled {
		return nil
	}
	var errs []error
	if o.Port <= 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port must be between 1 and 65535, got %d", o.Port))
	}
	if o.CertRotation {
		for flag, v := range map[string]string{
			"--namespace (or $POD_NAMESPACE)": o.Namespace, "--webhook-service-name": o.ServiceName,
			"--webhook-secret-name": o.SecretName, "--webhook-configuration-name": o.ConfigurationName,
		} {
			if v == "" {
				errs = append(errs, fmt.Errorf("%s is required when --webhook-cert-rotation is on", flag))
			}
		}
	}
	return errs
}

// newWebhookServer returns the webhook server New gives the manager.
func newWebhookServer(o WebhookOptions) webhook.Server {
	return webhook.NewServer(webhook.Options{Port: o.Port, CertDir: o.CertDir, TLSOpts: tlsOptions})
}

// setupWebhooks registers the selected systems' webhooks, once the serving
// certificate exists. With rotation on, a webhook server started without a
// certificate would fail, so registration (which starts the server) waits
// for the rotator to report the certificate written, copied into the
// certificate directory (certFileWriter) and its CA injected; until then
// /readyz fails, and the Service sends no admission request to this replica.
// Every replica serves webhooks and runs the rotator: neither needs the
// leader, and concurrent renewals are settled by the Secret's
// resourceVersion.
func setupWebhooks(mgr ctrl.Manager, o WebhookOptions, selected []systems.System) error {
	var hooks []systems.System
	for _, s := range selected {
		if s.Webhooks != nil {
			hooks = append(hooks, s)
		}
	}
	if !o.Enabled || len(hooks) == 0 {
		return nil
	}
	register := func() error {
		for _, s := range hooks {
			if err := s.Webhooks(mgr); err != nil {
				return fmt.Errorf("set up the webhooks of system %q: %w", s.Name, err)
			}
		}
		return nil
	}
	if !o.CertRotation {
		if err := register(); err != nil {
			return err
		}
		return mgr.AddReadyzCheck("webhooks", servingCheck(o))
	}

	certReady := make(chan struct{})
	secret := types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}
	dns := o.ServiceName + "." + o.Namespace + ".svc"
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      secret,
		CertDir:        o.CertDir,
		CAName:         "steward-webhook-ca",
		CAOrganization: "steward",
		DNSName:        dns,
		ExtraDNSNames:  []string{dns + ".cluster.local", o.ServiceName + "." + o.Namespace},
		IsReady:        certReady,
		Webhooks: []rotator.WebhookInfo{
			{Name: o.ConfigurationName, Type: rotator.Mutating},
			{Name: o.ConfigurationName, Type: rotator.Validating},
		},
		FieldOwner: "steward",
	})
	if err != nil {
		return fmt.Errorf("set up webhook certificate rotation: %w", err)
	}
	files := &certFileWriter{reader: mgr.GetAPIReader(), secret: secret, dir: o.CertDir}
	if err := mgr.Add(everyReplica(files.run)); err != nil {
		return fmt.Errorf("set up the webhook certificate files: %w", err)
	}
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		select {
		case <-certReady:
			ctrl.LoggerFrom(ctx).Info("Webhook certificate ready, serving webhooks", "secret", o.SecretName)
			return register()
		case <-ctx.Done():
			return nil
		}
	})); err != nil {
		return err
	}
	serving := servingCheck(o)
	return mgr.AddReadyzCheck("webhooks", func(req *http.Request) error {
		select {
		case <-certReady:
			return serving(req)
		default:
			return errors.New("the webhook certificate is not ready yet")
		}
	})
}

// servingCheck is the webhooks' readiness check: the webhook server
// completes a TLS handshake on its port with a certificate that the CA in
// the certificate directory (ca.crt, which the API server is given too)
// verifies for the webhook Service's DNS name, as the API server will
// check it. Without ca.crt (an issuer that does not provide it), the
// system's roots verify it. A replica is Ready only when an admission
// request sent to it would be answered.
func servingCheck(o WebhookOptions) healthz.Checker {
	return func(req *http.Request) error {
		config := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		if o.ServiceName != "" && o.Namespace != "" {
			config.ServerName = o.ServiceName + "." + o.Namespace + ".svc"
		}
		ca, err := os.ReadFile(filepath.Join(o.CertDir, caCertKey))
		switch {
		case err == nil:
			config.RootCAs = x509.NewCertPool()
			if !config.RootCAs.AppendCertsFromPEM(ca) {
				return fmt.Errorf("%s/ca.crt holds no PEM certificate", o.CertDir)
			}
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("read the webhook CA: %w", err)
		}
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		dialer := &tls.Dialer{Config: config}
		conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort("localhost", strconv.Itoa(o.Port)))
		if err != nil {
			return fmt.Errorf("the webhook server does not serve a valid certificate: %w", err)
		}
		return conn.Close()
	}
}

// everyReplica is a runnable that runs on every replica, not only on the
// leader.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection reports false: see everyReplica.
func (everyReplica) NeedLeaderElection() bool { return false }
