//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
)

// moUpgradeFrom is the MatrixOne version the upgrade spec starts from:
// images/matrixone built at that version (matrixone-<version>.tar, which
// make e2e-matrixone-upgrade builds). It upgrades to the image's own.
const moUpgradeFrom = "1.2.3"

// moUpgradeSpec upgrades a MatrixOneCluster between two real MatrixOne
// versions, each built from its Go module, under a writing client: a
// rollback while only the log service has the upgrade (the log stores go
// back, nothing else restarts), then the upgrade in the cluster's order
// (log stores, CNs drained, TN, proxies), in whose course a rollback is
// refused once a CN group has the new version. Every acknowledged row is
// read back after each; the writes' pauses are measured and named by what
// restarted meanwhile: none of 3 s or more while only a proxy restarts,
// none beyond maxUpgradePause. Three log stores (each restart keeps the
// shard's majority), two CNs and two proxies (one serves while the other
// restarts): about 3.6 GiB of memory limits.
//
// Its second image takes five to seven minutes to build on 2 cores, so
// it runs in its own lane, make e2e-matrixone-upgrade, not in make test;
// without the image it skips, naming the lane.
func moUpgradeSpec(t *testing.T, in specInput) {
	archive, ok := in.Archives["matrixone-"+moUpgradeFrom]
	if !ok {
		t.Skipf("needs MatrixOne %s's image (matrixone-%s.tar in %s): make e2e-matrixone-upgrade builds it and runs this spec",
			moUpgradeFrom, moUpgradeFrom, env.imagesDir)
	}
	installOperator(t)
	from, to := archiveImage(t, archive), in.image(t, "matrixone")
	m := &moCluster{scenario: newScenario(t, "moup", "matrixonecluster", "mo", "cn"), image: from}
	u := &moUpgrade{moUmbrella: &moUmbrella{moCluster: m, sharedStorage: "{fileSystem: {claimName: mo-shared, size: 1Gi}}",
		sharedClaim: "mo-shared", cns: 2, logStores: 3, proxies: 2}, from: from, to: to}
	m.runSteps(t, m.dumpState, []step{
		{"create on " + from, u.create},
		{"a rollback while only the log service has the upgrade, under writes", u.rollBackHalfway},
		{"the upgrade to " + to + " under writes, a rollback refused once a CN group has it", u.upgrade},
	})
}

type moUpgrade struct {
	*moUmbrella
	from, to string
}

func (u *moUpgrade) create(t *testing.T) {
	u.createTimed(t)
	u.expectVersion(t, u.from)
}

// expectVersion checks that every MatrixOne pod runs image and that SQL
// answers with its version.
func (u *moUpgrade) expectVersion(t *testing.T, image string) {
	t.Helper()
	for pod, img := range u.podImages(t) {
		if img != image {
			errorf(t, "%s runs %s, want %s", pod, img, image)
		}
	}
	version := image[strings.LastIndex(image, ":")+1:]
	out, err := u.sql("select version()")
	if err != nil || !strings.Contains(out, version) {
		errorf(t, "select version() answered %q (%v), want MatrixOne %s", strings.TrimSpace(out), err, version)
	}
	t.Logf("Every pod on %s; select version(): %s", image, strings.TrimSpace(out))
}

// rollBackHalfway starts the upgrade and, as soon as a log store runs the
// new version, sets the old one back: admitted, since no CN group has it.
// The log stores return to the old version; no CN, TN or proxy restarts.
func (u *moUpgrade) rollBackHalfway(t *testing.T) {
	before := u.podUIDs(t)
	u.underWrites(t, func() {
		u.setImage(t, u.to)
		eventually(t, 5*time.Minute, "a log store on "+u.to, func(context.Context) error {
			for pod, img := range u.podImages(t) {
				if strings.HasPrefix(pod, moClusterLog+"-") && img == u.to {
					return nil
				}
			}
			return fmt.Errorf("no log store runs %s yet", u.to)
		})
		mc := &mov1.MatrixOneCluster{}
		u.getInto(mc)
		t.Logf("A log store runs %s; status.sets: %s", u.to, setImages(mc))
		if out, err := u.patchImage(u.from); err != nil {
			fatalf(t, "the rollback before any CN group had the upgrade was refused: %v: %s", err, out)
		}
		u.waitOn(t, u.from, 10*time.Minute)
	})
	now := u.podUIDs(t)
	for pod, uid := range before {
		if !strings.HasPrefix(pod, moClusterLog+"-") && now[pod] != uid {
			errorf(t, "%s restarted during a rollback of the log service alone", pod)
		}
	}
	u.expectVersion(t, u.from)
}

// upgrade sets the new version and waits until every pod runs it and the
// cluster is Ready, under writes. It tries a rollback as soon as
// status.sets shows a CN group with the new version (refused, naming
// spec.image), checks that the roles restarted in order, and measures
// the upgrade and the writes' pauses (see moUpgradeSpec).
func (u *moUpgrade) upgrade(t *testing.T) {
	stop := make(chan struct{})
	stopWatch := sync.OnceFunc(func() { close(stop) })
	defer stopWatch()
	downs := u.watchPods(stop)
	var start, ready time.Time
	refusal := ""
	acked := u.underWrites(t, func() {
		start = time.Now()
		u.setImage(t, u.to)
		eventually(t, 15*time.Minute, "every pod on "+u.to+" and the cluster Ready", func(context.Context) error {
			mc := &mov1.MatrixOneCluster{}
			u.getInto(mc)
			if refusal == "" && slices.ContainsFunc(mc.Status.Sets, func(s mov1.SetStatus) bool { return s.Kind == "CNSet" && s.Image == u.to }) {
				out, err := u.patchImage(u.from)
				if err == nil {
					fatalf(t, "a rollback was admitted once a CN group had the upgrade (status.sets: %s)", setImages(mc))
				}
				refusal = strings.TrimSpace(out)
				t.Logf("The rollback refused once a CN group had the upgrade: %s", refusal)
			}
			return u.onImage(mc, u.to)
		})
		ready = time.Now()
	})
	stopWatch()
	down := <-downs
	if refusal == "" {
		errorf(t, "no rollback was tried: status.sets never showed a CN group with %s", u.to)
	} else if !strings.Contains(refusal, "spec.image") || !strings.Contains(refusal, "was given MatrixOne") {
		errorf(t, "the refusal %q does not name spec.image and the CN group that has the new version", refusal)
	}
	u.podsCreatedInOrder(t)
	u.expectVersion(t, u.to)

	var longest time.Duration
	var unexplained []string
	for i := 1; i < len(acked); i++ {
		from, to := acked[i-1], acked[i]
		gap := to.Sub(from)
		longest = max(longest, gap)
		if gap < 3*time.Second {
			continue
		}
		who := downDuring(down, from, to)
		t.Logf("Writes paused %s from %s: not ready meanwhile: %s", gap.Round(100*time.Millisecond),
			from.Sub(start).Round(time.Second), strings.Join(who, ", "))
		// With two proxies, one serves while the other restarts.
		if !slices.ContainsFunc(who, func(pod string) bool { return !strings.HasPrefix(pod, moClusterProxy+"-") }) {
			unexplained = append(unexplained, fmt.Sprintf("%s at %s", gap.Round(100*time.Millisecond), from.Sub(start).Round(time.Second)))
		}
	}
	t.Logf("The upgrade took %s (patch to Ready); the writes' longest pause %s; the TN down %s",
		ready.Sub(start).Round(time.Second), longest.Round(100*time.Millisecond), spans(down[moClusterTN+"-0"], start))
	if len(unexplained) > 0 {
		errorf(t, "writes paused 3 s or longer while no log store, CN or TN restarted: %s", strings.Join(unexplained, ", "))
	}
	if longest > maxUpgradePause {
		errorf(t, "writes paused %s, longer than %s", longest.Round(100*time.Millisecond), maxUpgradePause)
	}
}

// maxUpgradePause bounds the writes' longest pause during the upgrade.
// Measured: about 12 s when the log store that leads the log shard
// restarts (the shard elects a new leader; MatrixOne 1.2.4 has no call
// that hands leadership over first), about 6.5 s for the TN's restart,
// about 3 s while the first CN to restart is down after its drain. A
// pause beyond it is a stall, not a restart.
const maxUpgradePause = 25 * time.Second

func (u *moUpgrade) setImage(t *testing.T, image string) {
	t.Helper()
	if out, err := u.patchImage(image); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}

func (u *moUpgrade) patchImage(image string) (string, error) {
	return kubectl("patch", "matrixonecluster", "mo", "-n", u.ns, "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"image":%q}}`, image))
}

// waitOn waits until every pod runs image and the cluster is Ready.
func (u *moUpgrade) waitOn(t *testing.T, image string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "every pod on "+image+" and the cluster Ready", func(context.Context) error {
		mc := &mov1.MatrixOneCluster{}
		u.getInto(mc)
		return u.onImage(mc, image)
	})
}

func (u *moUpgrade) onImage(mc *mov1.MatrixOneCluster, image string) error {
	for pod, img := range u.podImages(u.t) {
		if img != image {
			return fmt.Errorf("%s runs %s", pod, img)
		}
	}
	return settled(mc.Generation, &mc.Status.StatusCore)
}

// podImages are the images of the cluster's pods, by name.
func (u *moUpgrade) podImages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range u.pods(t) {
		for _, c := range p.Spec.Containers {
			if c.Name == "mo" {
				out[p.Name] = c.Image
			}
		}
	}
	return out
}

func setImages(mc *mov1.MatrixOneCluster) string {
	var parts []string
	for _, s := range mc.Status.Sets {
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, s.Image))
	}
	return strings.Join(parts, ", ")
}

// span is a time a pod was not ready (or absent); an open one has no end.
type span struct{ from, to time.Time }

// watchPods lists the cluster's pods twice a second until stop is closed,
// and sends when each pod it saw was not ready or absent, by name.
func (u *moUpgrade) watchPods(stop <-chan struct{}) <-chan map[string][]span {
	out := make(chan map[string][]span, 1)
	go func() {
		down := map[string][]span{}
		seen := map[string]bool{}
		for {
			now := time.Now()
			pods, err := env.client.CoreV1().Pods(u.ns).List(context.Background(), metav1.ListOptions{LabelSelector: moClusterPods})
			if err == nil {
				ready := map[string]bool{}
				for _, p := range pods.Items {
					seen[p.Name] = true
					ready[p.Name] = p.DeletionTimestamp == nil && podReady(&p)
				}
				for name := range seen {
					spans := down[name]
					open := len(spans) > 0 && spans[len(spans)-1].to.IsZero()
					switch {
					case !ready[name] && !open:
						down[name] = append(spans, span{from: now})
					case ready[name] && open:
						spans[len(spans)-1].to = now
					}
				}
			}
			select {
			case <-stop:
				out <- down
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return out
}

// overlaps reports whether one of spans (an open one lasting) meets
// [from, to].
func overlaps(spans []span, from, to time.Time) bool {
	return slices.ContainsFunc(spans, func(s span) bool { return !s.from.After(to) && (s.to.IsZero() || !s.to.Before(from)) })
}

// downDuring names the pods not ready at some time in [from, to].
func downDuring(down map[string][]span, from, to time.Time) []string {
	var names []string
	for name, spans := range down {
		if overlaps(spans, from, to) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// spans prints spans as offsets from start.
func spans(s []span, start time.Time) string {
	var parts []string
	for _, sp := range s {
		end := "on"
		if !sp.to.IsZero() {
			end = sp.to.Sub(start).Round(100 * time.Millisecond).String()
		}
		parts = append(parts, fmt.Sprintf("%s..%s", sp.from.Sub(start).Round(100*time.Millisecond), end))
	}
	if len(parts) == 0 {
		return "never"
	}
	return strings.Join(parts, ", ")
}
