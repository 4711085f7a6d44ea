package gpss_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss"
	"github.com/stewardhq/steward/internal/testenv"
)

// hookServer is a kube-apiserver with the webhook configurations of
// config (make manifests) installed, pointed at a webhook server the test
// runs. Its webhooks fail closed: only the test that serves them writes
// there.
var hookServer = testenv.APIServer{
	CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	WebhookPaths:      []string{filepath.Join("..", "..", "charts", "steward", "files", "manifests.yaml")},
}

func endpoints(e ...string) func(*gpssv1.GpssClusterSpec) {
	return func(s *gpssv1.GpssClusterSpec) { s.Etcd.Endpoints = e }
}

func TestValidateEtcdEndpoints(t *testing.T) {
	c := gpss.New(gpss.Options{})
	for _, tc := range []struct {
		name      string
		endpoints []string
		want      string // in the error; "": valid
	}{
		{"one", []string{"http://etcd:2379"}, ""},
		{"several, https, an IP, no port", []string{"https://etcd-0.etcd:2379", "http://10.0.0.2:2379", "http://etcd"}, ""},
		{"an empty host", []string{"http://etcd:2379", "http://:2379"}, "spec.etcd.endpoints[1]: Invalid value: \"http://:2379\": must name a host"},
		{"port 0", []string{"http://etcd:0"}, "spec.etcd.endpoints[0]: Invalid value: \"http://etcd:0\": port 0 is not from 1 to 65535"},
		{"a port out of range", []string{"http://etcd:65536"}, "spec.etcd.endpoints[0]: Invalid value: \"http://etcd:65536\": port 65536"},
		{"an empty port", []string{"http://etcd:"}, "spec.etcd.endpoints[0]"},
		{"a host no DNS has", []string{"http://etc_d:2379"}, "spec.etcd.endpoints[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newCluster("ns", "g", endpoints(tc.endpoints...))
			c.Default(g)
			got := ""
			if err := c.Validate(g); err != nil {
				got = err.Error()
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWebhooksOnAPIServer writes invalid GpssClusters through a real
// kube-apiserver that calls the system's webhooks, as kubectl would: each
// is refused with a 422 whose message names the field.
func TestWebhooksOnAPIServer(t *testing.T) {
	c := hookServer.WebhookClient(t, newScheme(), gpss.SetupWebhooks)
	ns := testenv.Namespace(t, c, "gpss-webhooks-")
	for _, tc := range []struct {
		name     string
		endpoint string
		field    string
	}{
		{"an etcd endpoint without a host", "http://:2379", "spec.etcd.endpoints[0]"},
		{"an etcd endpoint's port out of range", "http://etcd:99999", "spec.etcd.endpoints[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(t.Context(), newCluster(ns, "g", endpoints(tc.endpoint)))
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "vgpsscluster.steward.dev") || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want the webhook's 422 naming %s", err, tc.field)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Details == nil ||
				!slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field == tc.field }) {
				t.Errorf("the status of %v has no cause for %s", err, tc.field)
			}
			t.Logf("refused: %v", err)
		})
	}
}
