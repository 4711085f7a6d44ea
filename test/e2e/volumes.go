//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// volumeGrowth says how a system's "volumes grow" step finds and resizes
// its cluster's volumes (scenario.volumesGrow).
type volumeGrowth struct {
	// sizePatch returns the merge patch that sets the storage size.
	sizePatch func(size string) string
	// smaller is refused at admission; larger is grown to.
	smaller, larger string
	// selector selects the cluster's StatefulSets, whose claims grow, and
	// its pods, which must neither restart nor be replaced meanwhile.
	selector string
	// waitReady waits until the cluster is Ready at its new generation.
	waitReady func()
}

// storageSize is the merge patch that sets spec.storage.size, where every
// system but GPSS keeps its volumes' size.
func storageSize(size string) string { return fmt.Sprintf(`{"spec":{"storage":{"size":%q}}}`, size) }

// instanceSelector selects the children (StatefulSets, pods) of the
// cluster name of the application app, by their standard labels.
func instanceSelector(app, name string) string {
	return "app.kubernetes.io/name=" + app + ",app.kubernetes.io/instance=" + name
}

// volumesGrow is the step every system runs on the framework's volume
// growth: a smaller size is refused at admission with the field and the
// reason; a larger one grows every claim of the selected StatefulSets in
// place, each StatefulSet is re-created with the larger claim template,
// and no pod of the cluster restarts or is replaced.
func (s *scenario) volumesGrow(t *testing.T, g volumeGrowth) {
	uids, claims := s.claimsToGrow(t, g.selector)
	before := s.podRuns(t, g.selector)

	out, err := kubectl("patch", s.resource, s.name, "-n", s.ns, "--type", "merge", "-p", g.sizePatch(g.smaller))
	if err == nil || !strings.Contains(out, "storage.size") || !strings.Contains(out, "never shrink") {
		errorf(t, "shrinking the volumes to %s: %v: %s", g.smaller, err, out)
	}
	start := time.Now()
	s.patch(g.sizePatch(g.larger))
	larger := resource.MustParse(g.larger)
	eventually(t, 2*time.Minute, fmt.Sprintf("claims %v at %s and their StatefulSets re-created with it", claims, g.larger), func(ctx context.Context) error {
		return s.grown(ctx, larger, uids, claims)
	})
	t.Logf("%d claims at %s and %d StatefulSets re-created %s after the change", len(claims), g.larger, len(uids), time.Since(start).Round(time.Second))
	g.waitReady()
	if after := s.podRuns(t, g.selector); fmt.Sprint(after) != fmt.Sprint(before) {
		errorf(t, "pods restarted or were replaced while the volumes grew: %v, then %v", before, after)
	}
	if out, err := kubectl("get", "events", "-n", s.ns, "--field-selector", "reason=VolumesGrowing", "-o", "custom-columns=NOTE:.message", "--no-headers"); err == nil {
		t.Logf("Events VolumesGrowing:\n%s", out)
	}
}

// claimsToGrow returns the UIDs of the StatefulSets selector selects that
// have a volume claim template, by name, and the claims of their pods.
func (s *scenario) claimsToGrow(t *testing.T, selector string) (map[string]types.UID, []string) {
	list, err := env.client.AppsV1().StatefulSets(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		fatalNow(t, err)
	}
	uids := map[string]types.UID{}
	var claims []string
	for _, sts := range list.Items {
		if len(sts.Spec.VolumeClaimTemplates) == 0 {
			continue
		}
		uids[sts.Name] = sts.UID
		for i := range int(*sts.Spec.Replicas) {
			claims = append(claims, fmt.Sprintf("%s-%s-%d", sts.Spec.VolumeClaimTemplates[0].Name, sts.Name, i))
		}
	}
	if len(claims) == 0 {
		fatalf(t, "no claims of StatefulSets %s to grow", selector)
	}
	return uids, claims
}

// grown says why the claims are not yet at size, or the StatefulSets of
// uids not yet re-created with it; nil when they are.
func (s *scenario) grown(ctx context.Context, size resource.Quantity, uids map[string]types.UID, claims []string) error {
	for _, name := range claims {
		c, err := env.client.CoreV1().PersistentVolumeClaims(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := c.Status.Capacity.Storage(); got.Cmp(size) != 0 {
			return fmt.Errorf("claim %s: capacity %s", name, got)
		}
	}
	for name, uid := range uids {
		sts, err := env.client.AppsV1().StatefulSets(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage(); sts.UID == uid || got.Cmp(size) != 0 {
			return fmt.Errorf("StatefulSet %s: %s, claim template %s", name, sts.UID, got)
		}
	}
	return nil
}

// podRuns returns, for each pod selector selects, its UID and its
// containers' restarts: a pod replaced or restarted changes it.
func (s *scenario) podRuns(t *testing.T, selector string) map[string]string {
	list, err := env.client.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		fatalNow(t, err)
	}
	runs := map[string]string{}
	for _, p := range list.Items {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		runs[p.Name] = fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	return runs
}

// defaultProvisioner is the provisioner of the cluster's default
// StorageClass, for the classes a test makes of its own.
func defaultProvisioner(t *testing.T) string {
	t.Helper()
	classes, err := env.client.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	for _, c := range classes.Items {
		if c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return c.Provisioner
		}
	}
	fatalf(t, "no default StorageClass to take the provisioner of")
	return ""
}
