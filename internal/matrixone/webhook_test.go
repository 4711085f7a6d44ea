package matrixone_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/testenv"
)

var (
	_ framework.ClashChecker[*matrixone.Cluster] = (*matrixone.ClusterController)(nil)
	_ framework.Admitter[*matrixone.Cluster]     = (*matrixone.ClusterController)(nil)
	_ framework.Admitter[*matrixone.LogSet]      = (*matrixone.LogSetController)(nil)
)

// hookServer is a kube-apiserver with the webhook configurations of
// config (make manifests) installed, pointed at a webhook server the test
// runs. Its webhooks fail closed: only the test that serves them writes
// there.
var hookServer = testenv.APIServer{
	CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	WebhookPaths:      []string{filepath.Join("..", "..", "charts", "steward", "files", "manifests.yaml")},
}

func TestClusterValidate(t *testing.T) {
	ctl := matrixone.NewClusterController()
	for _, tc := range []struct {
		name   string
		groups []string
		modify func(c *mov1.MatrixOneCluster)
		want   []string // in the error; none: valid
	}{
		{"valid", []string{"a", "b"}, nil, nil},
		{"a negative drainTimeout", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.CNGroups[0].DrainTimeout = &metav1.Duration{Duration: -time.Second}
		}, []string{"spec.cnGroups[0].drainTimeout", "must not be negative"}},
		{"a negative storeFailureTimeout", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.LogService.StoreFailureTimeout = &metav1.Duration{Duration: -time.Minute}
		}, []string{"spec.logService.storeFailureTimeout", "must not be negative"}},
		{"a root password no Secret can be named", []string{"a"}, func(c *mov1.MatrixOneCluster) { c.Spec.RootPassword = "Root" },
			[]string{"spec.rootPassword", "not a valid Secret name"}},
		{"an S3 bucket S3 refuses", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3.local", Bucket: "Data", Region: "r"}}
		}, []string{"spec.sharedStorage.s3.bucket"}},
		{"S3 on https with path style and a CA", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://10.0.0.9:7070", Bucket: "mo-data", Region: "r",
				PathStyle: true, CASecret: &mov1.S3CASecret{Name: "corp-ca"}}}
		}, nil},
		{"an S3 endpoint that is an address, virtual-hosted", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "http://10.0.0.9:7070", Bucket: "mo-data", Region: "r"}}
		}, []string{"spec.sharedStorage.s3.pathStyle", "the endpoint is an IP address", "set pathStyle"}},
		{"an S3 CA Secret no Secret can be named", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3", Bucket: "mo-data", Region: "r",
				CASecret: &mov1.S3CASecret{Name: "Corp_CA"}}}
		}, []string{"spec.sharedStorage.s3.caSecret.name", "not a valid Secret name"}},
		{"an S3 CA Secret's key no Secret can hold", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3", Bucket: "mo-data", Region: "r",
				CASecret: &mov1.S3CASecret{Name: "corp-ca", Key: "certs/ca.pem"}}}
		}, []string{"spec.sharedStorage.s3.caSecret.key", "not a valid Secret key"}},
		{"an S3 CA Secret without a name", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3", Bucket: "mo-data", Region: "r",
				CASecret: &mov1.S3CASecret{}}}
		}, []string{"spec.sharedStorage.s3.caSecret.name", "Required value"}},
		{"an S3 CA for plain HTTP", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "http://s3", Bucket: "mo-data", Region: "r",
				CASecret: &mov1.S3CASecret{Name: "corp-ca"}}}
		}, []string{"spec.sharedStorage.s3.caSecret", "a CA is for an https endpoint"}},
		{"a restore onto a shared filesystem, without the source's root password", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.RestoreFrom = &mov1.RestoreSource{Backup: "daily-1"}
		}, []string{"spec.sharedStorage.fileSystem", "must be s3 or a bucketClaim", "spec.rootPassword", "name the Secret holding the source cluster's root password"}},
		{"a restore onto S3 with the source's root password", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{BucketClaim: "restored"}
			c.Spec.RootPassword, c.Spec.RestoreFrom = "mo-log-root", &mov1.RestoreSource{Backup: "daily-1"}
		}, nil},
		{"a restore from a Backup no Backup can be named", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{BucketClaim: "restored"}
			c.Spec.RootPassword, c.Spec.RestoreFrom = "mo-log-root", &mov1.RestoreSource{Backup: "Daily_1"}
		}, []string{"spec.restoreFrom.backup"}},
		{"a BucketClaim no claim can be named", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{BucketClaim: "Data_1"}
		}, []string{"spec.sharedStorage.bucketClaim", "not a valid BucketClaim name"}},
		{"a BucketClaim", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{BucketClaim: "data"}
		}, nil},
		// Every class of CN group whose set makes another set's child.
		{"a group named as the TN", []string{"a", "tn"}, nil,
			[]string{"spec.cnGroups[1].name", "the CNSet mo-tn would make the StatefulSet mo-tn, which the TNSet mo-tn makes"}},
		{"a group named as the log service", []string{"log"}, nil, []string{"spec.cnGroups[0].name", "the LogSet mo-log makes"}},
		{"a group named as the proxy", []string{"proxy"}, nil,
			[]string{"spec.cnGroups[0].name", "the StatefulSet mo-proxy, which the ProxySet mo-proxy makes"}},
		{"a group named as the TN's headless Service", []string{"tn-headless"}, nil,
			[]string{"spec.cnGroups[0].name", "the Service mo-tn-headless, which the TNSet mo-tn makes"}},
		{"a group named as another group's headless Service", []string{"a", "a-headless"}, nil,
			[]string{"spec.cnGroups[1].name", "the Service mo-a-headless, which the CNSet mo-a makes"}},
		{"a group named as the log service's gossip Service", []string{"log-gossip"}, nil,
			[]string{"spec.cnGroups[0].name", "the CNSet mo-log-gossip would make the Service mo-log-gossip, which the LogSet mo-log makes"}},
		{"a group named like a set but not as one", []string{"tn2", "headless", "log-x"}, nil, nil},
		{"a group's label value with a dot", []string{"a"}, func(c *mov1.MatrixOneCluster) {
			c.Spec.CNGroups[0].Labels = []mov1.CNLabel{{Key: "account", Values: []string{"acc.1"}}}
		}, []string{"spec.cnGroups[0].labels[0].values[0]", "letters, digits and underscores"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("ns", tc.groups...)
			if tc.modify != nil {
				tc.modify(c)
			}
			ctl.Default(c)
			err := ctl.Validate(c)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), tc.want[0]); n != 1 {
				t.Errorf("%q names %s %d times, want once", err, tc.want[0], n)
			}
		})
	}
}

func TestStoreSetValidate(t *testing.T) {
	cn := func(modify func(c *mov1.CNSet)) *mov1.CNSet {
		c := &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cn"}, Spec: mov1.CNSetSpec{LogSet: "log"}}
		modify(c)
		return c
	}
	ctl := matrixone.NewCNSetController(matrixone.Options{})
	for _, tc := range []struct {
		name string
		set  *mov1.CNSet
		want string // in the error; "": valid
	}{
		{"valid", cn(func(*mov1.CNSet) {}), ""},
		{"a negative drainTimeout", cn(func(c *mov1.CNSet) { c.Spec.DrainTimeout = &metav1.Duration{Duration: -time.Minute} }),
			`spec.drainTimeout: Invalid value: "-1m0s": must not be negative`},
		{"a LogSet no LogSet can be named", cn(func(c *mov1.CNSet) { c.Spec.LogSet = "Log_Set" }), "spec.logSet"},
		{"a label's value with a hyphen", cn(func(c *mov1.CNSet) {
			c.Spec.Labels = []mov1.CNLabel{{Key: "account", Values: []string{"acc1", "acc-2"}}}
		}), `spec.labels[0].values[1]: Invalid value: "acc-2": a label's value must be letters, digits and underscores`},
		{"a label's key with a space", cn(func(c *mov1.CNSet) { c.Spec.Labels = []mov1.CNLabel{{Key: "work load", Values: []string{"olap"}}} }),
			`spec.labels[0].key: Invalid value: "work load": a label's key must be letters, digits and underscores`},
		{"labels", cn(func(c *mov1.CNSet) {
			c.Spec.Labels = []mov1.CNLabel{{Key: "account", Values: []string{"acc1"}}, {Key: "work_load", Values: []string{"OLAP"}}}
		}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl.Default(tc.set)
			err := ctl.Validate(tc.set)
			if got := errString(err); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClusterClashes(t *testing.T) {
	stored := func(name string, created int64, groups ...string) *mov1.MatrixOneCluster {
		c := newCluster("ns", groups...)
		c.Name = name
		if created > 0 {
			c.CreationTimestamp = metav1.Unix(created, 0)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		others []*mov1.MatrixOneCluster
		obj    *mov1.MatrixOneCluster // a create unless it has a creation time
		want   string                 // in the refusal; "" admits
	}{
		{"alone", nil, stored("a", 0, "cn"), ""},
		{"distinct", []*mov1.MatrixOneCluster{stored("b", 1, "cn")}, stored("a", 0, "cn"), ""},
		{"its group's set is another's TN", []*mov1.MatrixOneCluster{stored("a-b", 1, "cn")}, stored("a", 0, "b-tn"),
			"spec.cnGroups[0].name: Invalid value: \"b-tn\": the CNSet a-b-tn would make the StatefulSet a-b-tn, which the TNSet a-b-tn of MatrixOneCluster a-b makes"},
		{"its TN is another's group's set", []*mov1.MatrixOneCluster{stored("a", 1, "b-tn")}, stored("a-b", 0, "cn"),
			"metadata.name"},
		{"the older keeps its names", []*mov1.MatrixOneCluster{stored("a", 5, "b-tn")}, stored("a-b", 1, "cn"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(newScheme())
			for _, o := range tc.others {
				b = b.WithObjects(o)
			}
			err := matrixone.NewClusterController().Clashes(t.Context(), b.Build(), tc.obj)
			if got := errString(err); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Clashes = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWebhooksOnAPIServer writes invalid MatrixOne objects through a real
// kube-apiserver that calls the system's webhooks, as kubectl would: each
// is refused with a 422 whose message names the field.
func TestWebhooksOnAPIServer(t *testing.T) {
	c := hookServer.WebhookClient(t, newScheme(), matrixone.SetupWebhooks)
	ns := testenv.Namespace(t, c, "mo-webhooks-")
	n := 0
	cluster := func(modify func(c *mov1.MatrixOneCluster)) *mov1.MatrixOneCluster {
		n++
		mc := newCluster(ns, "a")
		mc.Name = fmt.Sprintf("mo%d", n)
		modify(mc)
		return mc
	}
	for _, tc := range []struct {
		name  string
		obj   client.Object
		field string
	}{
		{"a negative drainTimeout", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.CNGroups[0].DrainTimeout = &metav1.Duration{Duration: -time.Minute}
		}), "spec.cnGroups[0].drainTimeout"},
		{"a drainTimeout that does not parse", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": mov1.GroupVersion.String(), "kind": "MatrixOneCluster",
			"metadata": map[string]any{"name": "soon", "namespace": ns},
			"spec": map[string]any{
				"sharedStorage": map[string]any{"fileSystem": map[string]any{"claimName": "shared"}},
				"cnGroups":      []any{map[string]any{"name": "a", "drainTimeout": "soon"}},
			},
		}}, "spec.cnGroups[0].drainTimeout"},
		{"a LogSet's storeFailureTimeout that does not parse", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": mov1.GroupVersion.String(), "kind": "LogSet",
			"metadata": map[string]any{"name": "soon", "namespace": ns},
			"spec": map[string]any{
				"sharedStorage":       map[string]any{"fileSystem": map[string]any{"claimName": "shared"}},
				"storeFailureTimeout": "later",
			},
		}}, "spec.storeFailureTimeout"},
		{"an S3 bucket S3 refuses", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3.local", Bucket: "my_bucket", Region: "r"}}
		}), "spec.sharedStorage.s3.bucket"},
		{"an S3 endpoint without a host", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://:9000", Bucket: "data", Region: "r"}}
		}), "spec.sharedStorage.s3.endpoint"},
		{"a claim no claim can be named", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.SharedStorage.FileSystem.ClaimName = "Shared"
		}), "spec.sharedStorage.fileSystem.claimName"},
		{"a CN group that takes the TN's name", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.CNGroups = append(c.Spec.CNGroups, mov1.CNGroupSpec{Name: "tn"})
		}), "spec.cnGroups[1].name"},
		// The cluster's webhook dry-runs the CNSet, whose webhook dry-runs
		// its StatefulSet: the error comes back on the group's field.
		{"a CN group's toleration", cluster(func(c *mov1.MatrixOneCluster) {
			c.Spec.CNGroups[0].Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "Sometimes"}}
		}), "spec.cnGroups[0].tolerations[0].effect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, c.Create(t.Context(), tc.obj), tc.field)
		})
	}
}

// requireInvalid checks that err is a 422 with a cause on path, which the
// message names.
func requireInvalid(t *testing.T, err error, path string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want a 422 Invalid naming %s", err, path)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil ||
		!slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return strings.HasPrefix(c.Field, path) }) {
		t.Errorf("the status of %v has no cause for %s", err, path)
	}
	t.Logf("refused: %v", err)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
