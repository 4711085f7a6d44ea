//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestSmoke runs a 3-replica StatefulSet of the smoke image with a volume
// per pod on the real node, then checks from inside the pods what a
// workload relies on: DNS, Services, logs, exec, volumes, and that nothing
// can leave the cluster's network namespace.
func TestSmoke(t *testing.T) {
	skipUnlessFull(t)
	ns := newNamespace(t, "smoke")
	labels := map[string]string{"app": "web"}
	createSmokeWorkload(t, ns, labels)

	ctx := context.Background()
	eventually(t, 4*time.Minute, "StatefulSet web has 3 ready replicas", func(ctx context.Context) error {
		sts, err := env.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sts.Status.ReadyReplicas != 3 {
			return fmt.Errorf("%d ready", sts.Status.ReadyReplicas)
		}
		return nil
	})

	t.Run("pods run on the real node with bound volumes", func(t *testing.T) {
		for i := range 3 {
			pod, err := env.client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
			if err != nil {
				fatalNow(t, err)
			}
			if pod.Spec.NodeName != "localkube-node" {
				errorf(t, "pod %s ran on %s, want the real node", pod.Name, pod.Spec.NodeName)
			}
			pvc, err := env.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("data-web-%d", i), metav1.GetOptions{})
			if err != nil {
				fatalNow(t, err)
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				errorf(t, "claim %s is %s, want Bound", pvc.Name, pvc.Status.Phase)
			}
		}
	})

	t.Run("exec reaches the container and its volume", func(t *testing.T) {
		out, err := kubectl("exec", "-n", ns, "web-1", "--", "/smoke", "get", "http://localhost:8080/")
		if err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		if want := "host=web-1 volume=web-1"; !strings.Contains(out, want) {
			errorf(t, "exec output %q lacks %q", out, want)
		}
	})

	t.Run("logs show the container's output", func(t *testing.T) {
		out, err := kubectl("logs", "-n", ns, "web-0")
		if err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		if !strings.Contains(out, "Serving on :8080 as web-0") {
			errorf(t, "logs %q lack the server's start line", out)
		}
	})

	t.Run("a pod resolves a Service by DNS and reaches it through its ClusterIP", func(t *testing.T) {
		svc, err := env.client.CoreV1().Services(ns).Get(ctx, "web-client", metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		name := fmt.Sprintf("web-client.%s.svc.cluster.local", ns)
		out, err := kubectl("exec", "-n", ns, "web-0", "--", "/smoke", "lookup", name)
		if err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		if strings.TrimSpace(out) != svc.Spec.ClusterIP {
			fatalf(t, "%s resolved to %q, want ClusterIP %s", name, out, svc.Spec.ClusterIP)
		}
		// kube-proxy programs a Service's rules a moment after the
		// EndpointSlice lists its pods, and again as each pod joins: wait
		// for all three in the slice, then for a round of requests that
		// all succeed and are balanced, so that a request racing the last
		// rules is tried again rather than failing the test. Several
		// requests, so that kube-proxy's balancing also takes the path
		// back to the calling pod itself (hairpin).
		eventually(t, 30*time.Second, "the Service's EndpointSlice lists three ready pods", func(ctx context.Context) error {
			list, err := env.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web-client"})
			if err != nil {
				return err
			}
			ready := 0
			for _, slice := range list.Items {
				for _, ep := range slice.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
						ready++
					}
				}
			}
			if ready != 3 {
				return fmt.Errorf("%d ready endpoints", ready)
			}
			return nil
		})
		eventually(t, time.Minute, "12 requests in a row through the ClusterIP, balanced", func(context.Context) error {
			seen := map[string]bool{}
			for i := range 12 {
				out, err := kubectl("exec", "-n", ns, "web-0", "--", "/smoke", "get", "http://web-client:8080/")
				if err != nil {
					return fmt.Errorf("request %d: %w: %s", i+1, err, strings.TrimSpace(out))
				}
				fields := strings.Fields(out)
				if len(fields) == 0 {
					return fmt.Errorf("request %d: an empty answer", i+1)
				}
				seen[fields[0]] = true
			}
			if len(seen) < 2 {
				return fmt.Errorf("12 requests all reached %v; expected balancing over 3 pods", seen)
			}
			return nil
		})
		// A pod's DNS name in the headless Service resolves too.
		if out, err := kubectl("exec", "-n", ns, "web-0", "--", "/smoke", "get", "http://web-2.web:8080/"); err != nil || !strings.Contains(out, "host=web-2") {
			errorf(t, "headless pod name: %v: %s", err, out)
		}
	})

	t.Run("the node reaches a Service through its ClusterIP", func(t *testing.T) {
		// The API server calls admission webhooks and aggregated APIs at
		// their Services' ClusterIPs, from the node's network namespace:
		// kube-proxy's DNAT must get such connections to the pods, past
		// localkube's egress guard. localkube forward dials from there.
		svc, err := env.client.CoreV1().Services(ns).Get(ctx, "web-client", metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		url := localkubeForward(t, net.JoinHostPort(svc.Spec.ClusterIP, "8080"))
		eventually(t, 30*time.Second, "a GET from the node through the ClusterIP", func(ctx context.Context) error {
			status, body := get(ctx, url, "")
			if status != http.StatusOK || !strings.Contains(body, "host=web-") {
				return fmt.Errorf("status %d: %.200s", status, body)
			}
			return nil
		})
	})

	t.Run("nothing leaves the cluster's network namespace", func(t *testing.T) {
		before := egressDrops(t)
		// 192.0.2.1 is TEST-NET-1 (RFC 5737): an outside address nobody
		// owns. The packet must die inside the namespace, counted by
		// localkube's egress chain.
		out, err := kubectl("exec", "-n", ns, "web-0", "--", "/smoke", "dial", "--timeout", "3s", "192.0.2.1:80")
		if err == nil {
			fatalf(t, "a pod connected to an outside address: %s", out)
		}
		if after := egressDrops(t); after <= before {
			fatalf(t, "egress drop counter %d -> %d: the packet was not dropped locally", before, after)
		}
		// Names outside the cluster are not resolved: pods never get the
		// host's resolver and CoreDNS forwards nowhere.
		if out, err := kubectl("exec", "-n", ns, "web-0", "--", "/smoke", "lookup", "--timeout", "3s", "example.com"); err == nil {
			fatalf(t, "an outside name resolved: %s", out)
		}
	})

	// localkube's one grant beyond the Node authorizer (docs/localkube.md):
	// the kubelet reads a claim even before the authorizer's graph links a
	// pod on the node to it; a Secret of no pod on the node stays denied.
	t.Run("the kubelet may read any claim, not any Secret", func(t *testing.T) {
		for _, tc := range []struct {
			resource string
			allowed  bool
		}{{"persistentvolumeclaims", true}, {"secrets", false}} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:node:localkube-node", Groups: []string{"system:nodes", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "get", Resource: tc.resource, Name: "no-pod-uses-this"},
			}}
			got, err := env.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				fatalNow(t, err)
			}
			if got.Status.Allowed != tc.allowed {
				errorf(t, "node get %s: allowed=%t (%s), want %t", tc.resource, got.Status.Allowed, got.Status.Reason, tc.allowed)
			}
		}
	})

	t.Run("a re-created pod finds its volume", func(t *testing.T) {
		old, err := env.client.CoreV1().Pods(ns).Get(ctx, "web-2", metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		if err := env.client.CoreV1().Pods(ns).Delete(ctx, "web-2", metav1.DeleteOptions{}); err != nil {
			fatalNow(t, err)
		}
		eventually(t, 2*time.Minute, "a new web-2 is Ready", func(ctx context.Context) error {
			pod, err := env.client.CoreV1().Pods(ns).Get(ctx, "web-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pod.UID == old.UID {
				return fmt.Errorf("the old pod %s is still there", old.UID)
			}
			if !podReady(pod) {
				return fmt.Errorf("pod %s is not Ready", pod.UID)
			}
			return nil
		})
		out, err := kubectl("exec", "-n", ns, "web-2", "--", "/smoke", "get", "http://localhost:8080/")
		if err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		if !strings.Contains(out, "volume=web-2") {
			fatalf(t, "the new pod answered %q; its volume lost what the first one wrote", out)
		}
	})
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestSimulatedNodes schedules a pod onto a kwok node: it becomes Running
// without running, which is what scale tests of later issues use.
func TestSimulatedNodes(t *testing.T) {
	skipUnlessFull(t)
	ns := newNamespace(t, "kwok")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "simulated"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "kwok"},
			Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:   []corev1.Container{{Name: "c", Image: "localhost/does-not-exist:1"}},
		},
	}
	if _, err := env.client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	eventually(t, time.Minute, "the simulated pod is Running", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, "simulated", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") {
			return fmt.Errorf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	})
}

func createSmokeWorkload(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	port := []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-client"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: port}},
	} {
		if _, err := env.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			fatalNow(t, err)
		}
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			ServiceName:         "web",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name:            "web",
						Image:           smokeImage,
						ImagePullPolicy: corev1.PullNever,
						Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 2,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				},
			}},
		},
	}
	if _, err := env.client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
}

// localkubeForward relays a free loopback port to target, an address
// dialed from inside the cluster's network namespace, until the test ends,
// and returns the relay's http:// base URL.
func localkubeForward(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalNow(t, err)
	}
	listen := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(filepath.Join(env.binDir, "localkube"), "forward", "--listen", listen, "--target", target)
	if err := cmd.Start(); err != nil {
		fatalNow(t, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return "http://" + listen
}

func egressDrops(t *testing.T) int {
	t.Helper()
	out, err := localkube("egress-drops")
	if err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		fatalNow(t, err)
	}
	return n
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := env.client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			noteObjects(t, ns.Name)
			dumpNamespace(t, ns.Name)
		}
		_ = env.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// dumpNamespace logs what a failed test leaves in ns: its objects (Steward's
// with their status), Events, and the last lines of every container's log,
// this run's and the previous one's. CI keeps the output of a failed run
// only, so this is what a flake that does not reproduce by hand leaves to
// read.
func dumpNamespace(t *testing.T, ns string) {
	for _, args := range [][]string{
		{"get", "all,pvc,configmap", "-n", ns, "-o", "wide"},
		{"get", "steward", "-n", ns, "-o", "yaml"},
		{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
	} {
		out, _ := kubectl(args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		for _, previous := range []string{"false", "true"} {
			out, err := kubectl("logs", "-n", ns, p.Name, "--all-containers", "--prefix", "--tail=40", "--previous="+previous)
			if err == nil && out != "" {
				t.Logf("logs of %s (previous=%s):\n%s", p.Name, previous, out)
			}
		}
	}
}
