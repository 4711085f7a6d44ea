package zookeeper_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/internal/zookeeper"
)

// The controller has every admission hook of the framework.
var (
	_ framework.Defaulter[*zookeeper.Cluster]       = (*zookeeper.Controller)(nil)
	_ framework.UpdateDefaulter[*zookeeper.Cluster] = (*zookeeper.Controller)(nil)
	_ framework.Validator[*zookeeper.Cluster]       = (*zookeeper.Controller)(nil)
	_ framework.Warner[*zookeeper.Cluster]          = (*zookeeper.Controller)(nil)
)

// hookServer is a second kube-apiserver, with the webhook configurations
// controller-gen generates from the markers (make manifests) installed
// and pointed at a webhook server the test runs. It is not the shared
// server: its webhooks fail closed, so every write of a ZookeeperCluster
// fails while no test serves them.
var hookServer = testenv.APIServer{
	CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	WebhookPaths:      []string{filepath.Join("..", "..", "charts", "steward", "files", "manifests.yaml")},
}

// spec returns a defaulted cluster whose spec modify changed first.
func spec(modify func(s *zkv1.ZookeeperClusterSpec)) *zookeeper.Cluster {
	zk := &zookeeper.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "zk", Namespace: "ns"}}
	if modify != nil {
		modify(&zk.Spec)
	}
	(&zookeeper.Controller{}).Default(zk)
	return zk
}

func memory(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(s *zkv1.ZookeeperClusterSpec)
		want   []string // the fields of the errors, in order; none: valid
	}{
		{"defaults", nil, nil},
		{"operator-owned config keys, sorted", func(s *zkv1.ZookeeperClusterSpec) {
			s.Config = map[string]string{"tickTime": "3000", "server.1": "x", "dataDir": "/elsewhere"}
		}, []string{"spec.config[dataDir]", "spec.config[server.1]"}},
		{"memory limit below the heap", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Limits = "1g", memory("512Mi")
		}, []string{"spec.resources.limits.memory"}},
		{"memory limit equal to the heap", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Limits = "1048576k", memory("1Gi")
		}, []string{"spec.resources.limits.memory"}},
		{"memory limit just above the heap (a warning)", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Limits = "1g", memory("1100Mi")
		}, nil},
		{"memory request below the heap", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Requests = "1g", memory("512Mi")
		}, []string{"spec.resources.requests.memory"}},
		{"memory request equal to the heap", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Requests = "1g", memory("1Gi")
		}, nil},
		{"both below the heap", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Requests, s.Resources.Limits = "2g", memory("1Gi"), memory("1Gi")
		}, []string{"spec.resources.limits.memory", "spec.resources.requests.memory"}},
		{"a request above its limit", func(s *zkv1.ZookeeperClusterSpec) {
			s.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		}, []string{"spec.resources.requests.cpu", "spec.resources.requests.memory"}},
		{"a heap too large to count", func(s *zkv1.ZookeeperClusterSpec) { s.Heap = "99999999999g" }, []string{"spec.heap"}},
		{"numbers and booleans given as text, sorted", func(s *zkv1.ZookeeperClusterSpec) {
			s.Config = map[string]string{"tickTime": "2s", "syncEnabled": "yes", "forceSync": "true", "initLimit": "-1", "custom.key": "anything"}
		}, []string{"spec.config[forceSync]", "spec.config[initLimit]", "spec.config[syncEnabled]", "spec.config[tickTime]"}},
		{"typed settings that parse", func(s *zkv1.ZookeeperClusterSpec) {
			s.Config = map[string]string{"tickTime": "2000", "syncEnabled": "false", "forceSync": "no"}
		}, nil},
		{"an image that is no reference", func(s *zkv1.ZookeeperClusterSpec) { s.Image = "Zookeeper Latest!" }, []string{"spec.image"}},
		{"an image with a registry, a path and a digest", func(s *zkv1.ZookeeperClusterSpec) {
			s.Image = "registry.example:5000/team/zookeeper:3.8.0@sha256:" + strings.Repeat("a", 64)
		}, nil},
		{"a node port outside the range", func(s *zkv1.ZookeeperClusterSpec) {
			s.ClientService = zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](8080)}
		}, []string{"spec.clientService.nodePort"}},
		{"a node port in the range", func(s *zkv1.ZookeeperClusterSpec) {
			s.ClientService = zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](32000)}
		}, nil},
		{"everything at once", func(s *zkv1.ZookeeperClusterSpec) {
			s.Config = map[string]string{"clientPort": "1"}
			s.Heap, s.Resources.Limits = "4g", memory("1Gi")
		}, []string{"spec.config[clientPort]", "spec.resources.limits.memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&zookeeper.Controller{}).Validate(spec(tc.modify))
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("Validate: %v, want no error", err)
				}
				return
			}
			var agg utilerrors.Aggregate
			if !errors.As(err, &agg) {
				t.Fatalf("Validate: %v (%T), want a field.ErrorList's aggregate", err, err)
			}
			var fields []string
			for _, e := range agg.Errors() {
				var fe *field.Error
				if !errors.As(e, &fe) {
					t.Fatalf("error %v (%T) is no field error", e, e)
				}
				fields = append(fields, fe.Field)
				if fe.Detail == "" {
					t.Errorf("%s: no reason given", fe.Field)
				}
			}
			if !slices.Equal(fields, tc.want) {
				t.Errorf("Validate: errors on %q, want %q:\n%v", fields, tc.want, err)
			}
		})
	}

	// The reason a limit is rejected is in the message the user reads.
	err := (&zookeeper.Controller{}).Validate(spec(func(s *zkv1.ZookeeperClusterSpec) { s.Heap, s.Resources.Limits = "1g", memory("512Mi") }))
	if want := `spec.resources.limits.memory: Invalid value: "512Mi": must exceed spec.heap (1g): ` +
		`the JVM needs memory beyond its heap, and is OOM-killed at the limit`; err == nil || err.Error() != want {
		t.Errorf("Validate:\n got %v\nwant %s", err, want)
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(s *zkv1.ZookeeperClusterSpec)
		want   []string // substrings, one per warning
	}{
		{"defaults", nil, nil},
		{"one server", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 1 }, []string{"spec.replicas: a single server has no fault tolerance"}},
		{"two servers", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 2 }, []string{
			"spec.replicas: 2 servers survive no more failures than 1 do (0 failed servers): a quorum is a majority, 2 of 2"}},
		{"four servers", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 4 }, []string{
			"spec.replicas: 4 servers survive no more failures than 3 do (1 failed server): a quorum is a majority, 3 of 4"}},
		{"five servers", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 5 }, nil},
		{"a tight memory limit", func(s *zkv1.ZookeeperClusterSpec) { s.Heap, s.Resources.Limits = "1g", memory("1100Mi") }, []string{
			"spec.resources.limits.memory: 1100Mi leaves the JVM 76Mi beyond spec.heap (1g); it uses about 256Mi there"}},
		{"an ample memory limit", func(s *zkv1.ZookeeperClusterSpec) { s.Heap, s.Resources.Limits = "1g", memory("2Gi") }, nil},
		{"a limit below the heap is an error, not a warning", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Limits = "1g", memory("512Mi")
		}, nil},
		{"both", func(s *zkv1.ZookeeperClusterSpec) {
			s.Replicas, s.Heap, s.Resources.Limits = 6, "512m", memory("600Mi")
		}, []string{"spec.replicas: 6 servers", "spec.resources.limits.memory: 600Mi leaves the JVM 88Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&zookeeper.Controller{}).Warnings(spec(tc.modify))
			if len(got) != len(tc.want) {
				t.Fatalf("Warnings: %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("warning %q does not contain %q", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDefaultSharesTheAPIsDefault(t *testing.T) {
	got := &zookeeper.Cluster{Spec: zkv1.ZookeeperClusterSpec{Heap: "1g"}}
	(&zookeeper.Controller{}).Default(got)
	if q := got.Spec.Resources.Requests.Memory(); q.Cmp(resource.MustParse("1280Mi")) != 0 {
		t.Errorf("memory request %s, want 1280Mi: 1g of heap and %d bytes beyond", q, zkv1.JVMMemoryOverhead)
	}
	old, update := spec(nil), spec(nil)
	update.Spec.Heap = "1g"
	(&zookeeper.Controller{}).DefaultUpdate(old, update)
	(&zookeeper.Controller{}).Default(update)
	if q := update.Spec.Resources.Requests.Memory(); q.Cmp(resource.MustParse("1280Mi")) != 0 {
		t.Errorf("after a heap change, memory request %s, want 1280Mi", q)
	}
}

// warningRecorder collects the warnings the API server sends a client.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the warnings received since the last call.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.list
	w.list = nil
	return list
}

// TestWebhooksOnAPIServer runs the system's webhooks in a manager and
// writes ZookeeperClusters through a client of a real kube-apiserver that
// calls them, as kubectl would.
func TestWebhooksOnAPIServer(t *testing.T) {
	cfg := hookServer.Config(t)
	scheme := newScheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme,
		Logger:        testenv.Logger(t, testVerbosity),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: hookServer.WebhookServer(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := zookeeper.System(zookeeper.Options{}).Webhooks(mgr); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	started := mgr.GetWebhookServer().StartedChecker()
	testenv.Eventually(t, "the webhook server to serve", func() (bool, string) {
		err := started(nil)
		return err == nil, errString(err)
	})

	warnings := &warningRecorder{}
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "zk-webhooks-")
	cluster := func(name string, modify func(s *zkv1.ZookeeperClusterSpec)) *zookeeper.Cluster {
		zk := &zookeeper.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if modify != nil {
			modify(&zk.Spec)
		}
		return zk
	}
	get := func(t *testing.T, name string) *zookeeper.Cluster {
		t.Helper()
		zk := &zookeeper.Cluster{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, zk); err != nil {
			t.Fatal(err)
		}
		return zk
	}
	// requireInvalid checks err is the validating webhook's 422 naming
	// path.
	requireInvalid := func(t *testing.T, err error, path string) {
		t.Helper()
		if !apierrors.IsInvalid(err) {
			t.Fatalf("got %v, want a 422 Invalid naming %s", err, path)
		}
		for _, want := range []string{"vzookeepercluster.steward.dev", path, "must exceed spec.heap"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Details == nil ||
			!slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field == path }) {
			t.Errorf("the status of %v has no cause for %s", err, path)
		}
	}

	t.Run("a memory limit below the heap is rejected", func(t *testing.T) {
		err := c.Create(t.Context(), cluster("tight", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap, s.Resources.Limits = "1g", memory("512Mi")
		}))
		requireInvalid(t, err, "spec.resources.limits.memory")
		t.Logf("Rejected: %v", err)
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "tight"}, &zookeeper.Cluster{}); !apierrors.IsNotFound(err) {
			t.Errorf("get the rejected cluster: %v, want NotFound", err)
		}
	})

	t.Run("what the user wrote is judged, not replaced or left unnamed", func(t *testing.T) {
		for _, tc := range []struct {
			spec map[string]any
			path string
		}{
			// Decoded into Go, 0 is "unset": the default must not take its place.
			{map[string]any{"replicas": int64(0)}, "spec.replicas"},
			// A decoder error names no field; the schema does.
			{map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}}, "spec.resources.limits.memory"},
		} {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": zkv1.GroupVersion.String(), "kind": "ZookeeperCluster",
				"metadata": map[string]any{"name": "written", "namespace": ns},
				"spec":     tc.spec,
			}}
			err := c.Create(t.Context(), u)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("spec %v: got %v, want a 422 naming %s", tc.spec, err, tc.path)
			}
		}
	})

	t.Run("the memory request is defaulted from the heap", func(t *testing.T) {
		warnings.take()
		if err := c.Create(t.Context(), cluster("plain", nil)); err != nil {
			t.Fatal(err)
		}
		zk := get(t, "plain")
		// The CRD defaulted the heap; the webhook derived the request.
		if q := zk.Spec.Resources.Requests.Memory(); zk.Spec.Heap != zkv1.DefaultHeap || q.String() != "768Mi" {
			t.Errorf("stored heap %q and memory request %s, want %s and 768Mi", zk.Spec.Heap, q, zkv1.DefaultHeap)
		}
		if w := warnings.take(); len(w) > 0 {
			t.Errorf("warnings for a default cluster: %q", w)
		}
	})

	t.Run("a derived memory request follows the heap", func(t *testing.T) {
		// An update that keeps the stored request, as kubectl apply does
		// when the manifest has none.
		zk := get(t, "plain")
		zk.Spec.Heap = "1g"
		if err := c.Update(t.Context(), zk); err != nil {
			t.Fatal(err)
		}
		if q := get(t, "plain").Spec.Resources.Requests.Memory(); q.String() != "1280Mi" {
			t.Errorf("memory request %s after the heap went to 1g, want 1280Mi", q)
		}
	})

	t.Run("an update to an invalid spec is rejected", func(t *testing.T) {
		zk := get(t, "plain")
		zk.Spec.Resources.Limits = memory("1Gi")
		requireInvalid(t, c.Update(t.Context(), zk), "spec.resources.limits.memory")
	})

	t.Run("an even replica count is admitted with a warning", func(t *testing.T) {
		warnings.take()
		if err := c.Create(t.Context(), cluster("even", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 4 })); err != nil {
			t.Fatal(err)
		}
		w := warnings.take()
		if len(w) != 1 || !strings.Contains(w[0], "spec.replicas: 4 servers survive no more failures than 3 do") {
			t.Errorf("warnings %q, want one about 4 replicas", w)
		}
		if r := get(t, "even").Spec.Replicas; r != 4 {
			t.Errorf("stored replicas %d, want 4", r)
		}
	})

	t.Run("editing metadata repeats no warning", func(t *testing.T) {
		zk := get(t, "even")
		zk.Labels = map[string]string{"team": "a"}
		warnings.take()
		if err := c.Update(t.Context(), zk); err != nil {
			t.Fatal(err)
		}
		if w := warnings.take(); len(w) > 0 {
			t.Errorf("warnings for a label change: %q", w)
		}
	})

	t.Run("deletes are allowed", func(t *testing.T) {
		for _, name := range []string{"plain", "even"} {
			if err := c.Delete(t.Context(), cluster(name, nil)); err != nil {
				t.Errorf("delete %s: %v", name, err)
			}
		}
	})

	t.Run("storage grows where its class expands, never shrinks", func(t *testing.T) {
		for name, expands := range map[string]bool{"grows": true, "fixed": false} {
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Provisioner: "example.com/p", AllowVolumeExpansion: ptr.To(expands)}
			if err := c.Create(t.Context(), class); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), class) })
			if err := c.Create(t.Context(), cluster("vol-"+name, func(s *zkv1.ZookeeperClusterSpec) { s.Storage.StorageClassName = &class.Name })); err != nil {
				t.Fatal(err)
			}
		}
		resize := func(name, size string) error {
			zk := get(t, name)
			zk.Spec.Storage.Size = ptr.To(resource.MustParse(size))
			return c.Update(t.Context(), zk)
		}
		if err := resize("vol-grows", "2Gi"); err != nil {
			t.Errorf("growing where the class expands: %v", err)
		}
		for _, tc := range []struct{ name, size, says string }{
			{"vol-grows", "1Gi", "spec.storage.size: Forbidden: 1Gi is less than 2Gi: a volume can grow, never shrink"},
			{"vol-fixed", "2Gi", "spec.storage.size: Forbidden: cannot grow from 1Gi to 2Gi: StorageClass " + ns + "-fixed does not allow volume expansion"},
		} {
			err := resize(tc.name, tc.size)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s to %s: %v, want a 422 saying %q", tc.name, tc.size, err, tc.says)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
