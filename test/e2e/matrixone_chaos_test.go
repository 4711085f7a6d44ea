//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/test/chaos"
)

// moChaosModel is what the chaos run asked of the MatrixOne sets: the
// actions read it to choose, and settle waits for the sets to match it.
type moChaosModel struct {
	cns, proxies int32
	cnLogLevel   string
}

// matrixoneChaos attacks real MatrixOne (a LogSet of one store, a TN, CNs
// and proxies, as moClusterSpec runs them) with a seeded run while a
// client inserts rows through the proxies' Service: the CNs scaled between
// one and two (each leaving CN drained first), the proxies between one and
// two, the CNs' configuration rolled, each at times with a fault in the
// middle of its flow, and faults on their own (operator replicas killed or
// deleted, a CN, the TN, the log store or a proxy killed, frozen or cut
// off, the API server restarted). After every step every set must be
// Ready as asked within 8 minutes, the writes go on, every acknowledged
// row be stored, and no volume claim of the log store's or the TN's be
// gone. About 2.6 GiB of memory limits (3.2 GiB with two CNs and two
// proxies); a step settled 20 s to 1m25s after it in the first run.
func matrixoneChaos(t *testing.T, in specInput, cfg chaosConfig) {
	m := &moCluster{scenario: newScenario(t, "mo-chaos", "cnset", moClusterCN, "cn"), image: in.image(t, "matrixone"),
		logStorage: "size: 512Mi, storageClassName: " + *sizedStorageClass(t)}
	model := &moChaosModel{cns: 2, proxies: 1, cnLogLevel: "info"}
	m.create(t)
	m.next = 1
	w := startRowWriter(300*time.Millisecond, func(id int) error {
		_, err := m.sql(fmt.Sprintf("insert into e2e.t values (%d)", id))
		return err
	})
	defer w.stop()
	seen := 0
	claims := map[string]bool{}

	faults := operatorFaults(t)
	for _, c := range []struct {
		component string
		names     func() []string
	}{
		{"cn", func() []string { return ordinals(moClusterCN, int(model.cns)) }},
		{"tn", func() []string { return ordinals(moClusterTN, 1) }},
		{"log", func() []string { return ordinals(moClusterLog, 1) }},
		{"proxy", func() []string { return ordinals(moClusterProxy, int(model.proxies)) }},
	} {
		faults = append(faults, podFaults(m.ns, c.component, c.names)...)
	}
	faults = append(faults, fillVolumeFault(m.ns, "log"), restartAPIServerFault)
	withFault := midFlow(faults)
	patch := func(set, patch string) error {
		s := m.scenario
		s.resource, s.name = set, map[string]string{"cnset": moClusterCN, "proxyset": moClusterProxy}[set]
		return s.chaosPatch(patch)
	}
	operations := []chaos.Action{
		{Name: "scale-cns", Weight: 3, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			model.cns = 3 - model.cns
			if err := patch("cnset", fmt.Sprintf(`{"spec":{"replicas":%d}}`, model.cns)); err != nil {
				return "", err
			}
			return withFault(ctx, r, fmt.Sprintf("to %d CN%s", model.cns, map[bool]string{true: "s"}[model.cns > 1]))
		}},
		{Name: "scale-proxies", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			model.proxies = 3 - model.proxies
			if err := patch("proxyset", fmt.Sprintf(`{"spec":{"replicas":%d}}`, model.proxies)); err != nil {
				return "", err
			}
			return withFault(ctx, r, fmt.Sprintf("to %d prox%s", model.proxies, map[bool]string{true: "ies", false: "y"}[model.proxies > 1]))
		}},
		{Name: "reconfigure-cns", Weight: 2, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			model.cnLogLevel = map[bool]string{true: "debug", false: "info"}[model.cnLogLevel == "info"]
			config, _ := json.Marshal(fmt.Sprintf("[log]\nlevel = %q\n", model.cnLogLevel))
			if err := patch("cnset", fmt.Sprintf(`{"spec":{"config":%s}}`, config)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "the CNs' log level "+model.cnLogLevel)
		}},
	}
	settle := func(context.Context) error {
		return holdsFor(8*time.Minute, chaosSettledFor, func(ctx context.Context) error {
			if err := m.allReady(); err != nil {
				return err
			}
			for component, n := range map[string]int32{"cn": model.cns, "proxy": model.proxies, "tn": 1, "log": 1} {
				if err := podsReady(ctx, m.ns, "app.kubernetes.io/component="+component, int(n)); err != nil {
					return fmt.Errorf("%s: %w", component, err)
				}
			}
			return nil
		})
	}
	check := func(context.Context) error {
		if err := waitFor(2*time.Minute, func(context.Context) error {
			if n := len(w.acked()); n <= seen {
				return fmt.Errorf("%d rows acknowledged, none since the last check", n)
			}
			return nil
		}); err != nil {
			return errors.New("the writes stopped: " + err.Error())
		}
		acked := w.acked()
		seen = len(acked)
		stored, err := m.storedRows()
		if err != nil {
			return err
		}
		if missing := slices.DeleteFunc(slices.Clone(acked), func(id int) bool { return stored[id] }); len(missing) > 0 {
			return fmt.Errorf("%d of %d acknowledged rows are missing, the first %v", len(missing), len(acked), missing[:min(len(missing), 10)])
		}
		now, err := m.statefulClaims()
		if err != nil {
			return err
		}
		for c := range claims {
			if !slices.Contains(now, c) {
				return fmt.Errorf("volume claim %s is gone", c)
			}
		}
		for _, c := range now {
			claims[c] = true
		}
		t.Logf("Invariants: %d acknowledged rows stored (%d in e2e.t); the log store's and the TN's claims stay: %v", len(acked), len(stored), now)
		return nil
	}
	cfg.run(t, append(operations, faults...), settle, check, quietSpec{ns: m.ns, gv: mov1.GroupVersion}, func() { m.dumpState(); m.dumpOperatorLogs() })
}

// statefulClaims are the volume claims of the log store and the TN, by
// name; an error unless there is one of each.
func (m *moCluster) statefulClaims() ([]string, error) {
	list, err := env.client.CoreV1().PersistentVolumeClaims(m.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		if strings.HasPrefix(c.Name, "data-"+moClusterLog+"-") || strings.HasPrefix(c.Name, "data-"+moClusterTN+"-") {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	if len(out) < 2 {
		return nil, fmt.Errorf("the log store's and the TN's volume claims: %v", out)
	}
	return out, nil
}
