//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/test/chaos"
)

// obChaosModel is what the chaos run asked of the OBCluster and its
// tenant: the actions read it to choose, and settle waits for both to
// match it.
type obChaosModel struct {
	zones     [3]int // observers of z1, z2, z3
	image     string
	syslog    string // the syslog_level parameter
	tenantCPU string // the tenant's unit's maxCPU
}

func (m *obChaosModel) servers() int32 { return int32(m.zones[0] + m.zones[1] + m.zones[2]) }

// observers are the observer pods the model has, zone by zone.
func (m *obChaosModel) observers() []string {
	var out []string
	for i, n := range m.zones {
		out = append(out, ordinals(fmt.Sprintf("%s-z%d", obName, i+1), n)...)
	}
	return out
}

// oceanbaseChaos attacks a 3-zone OBCluster with a tenant in every zone,
// written to throughout (a row every 700 ms as the tenant's root), with a
// seeded run: a zone scaled between one and two observers, a parameter and
// the tenant's unit changed, the one upgrade (obsim 1.0 to 1.1: OceanBase
// does not go back), the OBTenant deleted and created again under Retain
// (it takes the tenant over), each at times with a fault in the middle of
// its flow, and faults on their own (operator replicas killed or deleted,
// observers killed, frozen or cut off, every statement slowed by obsim's
// knobs, the API server restarted). After every step the cluster and the
// tenant must be Ready as asked within 5 minutes, the writes go on, every
// acknowledged row be stored, and OceanBase list exactly the servers the
// cluster has, each ACTIVE with its pod: no server's pod deleted while
// OceanBase held it. The observers are Steward's simulator, obsim, not
// OceanBase.
func oceanbaseChaos(t *testing.T, in specInput, cfg chaosConfig) {
	tags := archiveTags(t, in.archive(t, "oceanbase-obsim"))
	o := &obDataScenario{obScenario: obScenario{scenario: newScenario(t, "ob-chaos", "obcluster", obName, "observer"), image: tags[0], next: tags[len(tags)-1]}}
	m := &obChaosModel{zones: [3]int{1, 1, 1}, image: o.image, syslog: "INFO", tenantCPU: "1"}
	o.chaosCreate(t, m)
	o.writer = o.startWriter()
	defer o.writer.stop()
	seen := 0 // acknowledged rows at the last check

	faults := append(append(operatorFaults(t), podFaults(o.ns, "observer", m.observers)...),
		chaos.Action{Name: "slow-statements", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			return o.chaosSlow(ctx, m, chaos.Between(r, time.Second, 3*time.Second), chaos.Between(r, 10*time.Second, 30*time.Second))
		}},
		restartAPIServerFault)
	withFault := midFlow(faults)
	operations := []chaos.Action{
		{Name: "scale", Weight: 3, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			z := r.IntN(3)
			m.zones[z] = 3 - m.zones[z] // 1 and 2
			if err := o.chaosPatch(fmt.Sprintf(`{"spec":{"zones":[{"name":"z1","replicas":%d},{"name":"z2","replicas":%d},{"name":"z3","replicas":%d}]}}`, m.zones[0], m.zones[1], m.zones[2])); err != nil {
				return "", err
			}
			return withFault(ctx, r, fmt.Sprintf("z%d to %d observer%s", z+1, m.zones[z], map[bool]string{true: "s"}[m.zones[z] > 1]))
		}},
		{Name: "set-parameter", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.syslog = chaos.OneOf(r, slices.DeleteFunc([]string{"INFO", "WARN", "DEBUG"}, func(l string) bool { return l == m.syslog })...)
			if err := o.chaosPatch(fmt.Sprintf(`{"spec":{"parameters":[{"name":"syslog_level","value":%q}]}}`, m.syslog)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "syslog_level "+m.syslog)
		}},
		{Name: "alter-unit", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.tenantCPU = map[bool]string{true: "2", false: "1"}[m.tenantCPU == "1"]
			if err := o.chaosPatchTenant(fmt.Sprintf(`{"spec":{"unit":{"maxCPU":%q}}}`, m.tenantCPU)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "the tenant's maxCPU "+m.tenantCPU)
		}},
		{Name: "upgrade", Weight: 1, Enabled: func() bool { return m.image != o.next }, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.image = o.next
			if err := o.chaosPatch(fmt.Sprintf(`{"spec":{"image":%q}}`, m.image)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "to "+m.image)
		}},
		{Name: "recreate-tenant", Weight: 1, Run: func(ctx context.Context, _ *rand.Rand) (string, error) {
			return o.chaosRecreateTenant(ctx, m)
		}},
	}
	settle := func(context.Context) error {
		return holdsFor(5*time.Minute, chaosSettledFor, func(ctx context.Context) error {
			return o.chaosSettled(ctx, m)
		})
	}
	check := func(context.Context) error {
		if err := waitFor(time.Minute, func(context.Context) error {
			if n := len(o.writer.acked()); n <= seen {
				return fmt.Errorf("%d rows acknowledged, none since the last check", n)
			}
			return nil
		}); err != nil {
			return errors.New("the writes stopped: " + err.Error())
		}
		acked := o.writer.acked()
		seen = len(acked)
		var stored []int
		if err := waitFor(time.Minute, func(context.Context) error {
			var err error
			stored, err = o.rowsOf(obName, obTenant)
			return err
		}); err != nil {
			return fmt.Errorf("reading app.t: %w", err)
		}
		if missing := slices.DeleteFunc(slices.Clone(acked), func(id int) bool { _, ok := slices.BinarySearch(stored, id); return ok }); len(missing) > 0 {
			return fmt.Errorf("%d of %d acknowledged rows are missing, the first %v", len(missing), len(acked), missing[:min(len(missing), 10)])
		}
		if err := o.chaosServersHeld(); err != nil {
			return err
		}
		t.Logf("Invariants: %d acknowledged rows stored (%d in app.t); OceanBase lists the %d servers, each ACTIVE with its pod", len(acked), len(stored), m.servers())
		return nil
	}
	cfg.run(t, append(operations, faults...), settle, check, quietSpec{ns: o.ns, gv: obv1.GroupVersion}, func() { o.dumpState(); o.dumpOperatorLogs() })
}

// chaosCreate creates the cluster and the tenant the model describes,
// with the table the writer fills, and waits until they are Ready.
func (o *obDataScenario) chaosCreate(t *testing.T, m *obChaosModel) {
	cluster := o.chaosCluster(m)
	if err := o.c.Create(context.Background(), cluster); err != nil {
		fatalNow(t, err)
	}
	o.startClient()
	o.waitReady(m.servers(), 3*time.Minute)
	o.rootPassword = o.secret(obName + "-root")
	if err := o.c.Create(context.Background(), o.chaosTenant(m)); err != nil {
		fatalNow(t, err)
	}
	o.waitTenantReady(2 * time.Minute)
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)"} {
		if _, err := o.sqlAs("root@"+obTenant, o.secret(obPrimaryPW), q); err != nil {
			fatalf(t, "%s: %v", q, err)
		}
	}
}

// chaosCluster is the OBCluster of the model: observers small enough for
// six beside the other systems.
func (o *obDataScenario) chaosCluster(m *obChaosModel) *obv1.OBCluster {
	cluster := &obv1.OBCluster{
		ObjectMeta: metav1.ObjectMeta{Name: obName, Namespace: o.ns},
		Spec: obv1.OBClusterSpec{
			Image: m.image, ImagePullPolicy: corev1.PullNever,
			Parameters: []obv1.Parameter{{Name: "syslog_level", Value: m.syslog}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		},
	}
	for i, n := range m.zones {
		cluster.Spec.Zones = append(cluster.Spec.Zones, obv1.OBZoneSpec{Name: fmt.Sprintf("z%d", i+1), Replicas: int32(n)})
	}
	cluster.Spec.Storage.Size = ptr.To(resource.MustParse("64Mi"))
	return cluster
}

// chaosTenant is the OBTenant of the model, in every zone, kept in
// OceanBase when the OBTenant is deleted (Retain, the default).
func (o *obDataScenario) chaosTenant(m *obChaosModel) *obv1.OBTenant {
	tn := tenantSpec(o.ns, obTenant, obName)
	tn.Spec.Zones = []obv1.OBTenantZone{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}}
	tn.Spec.Unit.MaxCPU = resource.MustParse(m.tenantCPU)
	// minCPU defaults to maxCPU: a tenant re-created at maxCPU 2 could
	// then not go back to 1 (seed 20261203, step 29).
	tn.Spec.Unit.MinCPU = ptr.To(resource.MustParse("1"))
	return tn
}

// chaosPatchTenant merge-patches the OBTenant, retrying while the API
// server does not answer.
func (o *obDataScenario) chaosPatchTenant(patch string) error {
	return waitFor(time.Minute, func(context.Context) error {
		if out, err := kubectl("patch", "obtenant", obTenant, "-n", o.ns, "--type", "merge", "-p", patch); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
}

// chaosRecreateTenant deletes the OBTenant (Retain: the tenant and its
// rows stay in OceanBase), waits until it is gone, and creates it again:
// it takes the tenant over.
func (o *obDataScenario) chaosRecreateTenant(ctx context.Context, m *obChaosModel) (string, error) {
	if err := o.c.Delete(ctx, &obv1.OBTenant{ObjectMeta: metav1.ObjectMeta{Name: obTenant, Namespace: o.ns}}); err != nil {
		return "", err
	}
	if err := waitFor(3*time.Minute, func(ctx context.Context) error {
		err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obTenant}, &obv1.OBTenant{})
		if err == nil {
			return errors.New("the OBTenant is still there")
		}
		return client.IgnoreNotFound(err)
	}); err != nil {
		return "", fmt.Errorf("deleting: %w", err)
	}
	if err := o.c.Create(ctx, o.chaosTenant(m)); err != nil {
		return "", err
	}
	return "deleted the OBTenant (Retain) and created it again", nil
}

// chaosSettled says why the cluster and the tenant do not yet match the
// model: the cluster Ready with its servers on the image, every observer
// pod Ready, the tenant Ready and NORMAL.
func (o *obDataScenario) chaosSettled(ctx context.Context, m *obChaosModel) error {
	ob := &obv1.OBCluster{}
	if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obName}, ob); err != nil {
		return err
	}
	st := ob.Status
	if err := settled(ob.Generation, &st.StatusCore); err != nil {
		return err
	}
	if st.ActiveServers != m.servers() || len(st.Servers) != int(m.servers()) || st.Image != m.image {
		return fmt.Errorf("%d servers active, %d in status, image %s; want %d on %s", st.ActiveServers, len(st.Servers), st.Image, m.servers(), m.image)
	}
	if err := podsReady(ctx, o.ns, "app.kubernetes.io/component=observer", int(m.servers())); err != nil {
		return err
	}
	tn := &obv1.OBTenant{}
	if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obTenant}, tn); err != nil {
		return err
	}
	if err := settled(tn.Generation, &tn.Status.StatusCore); err != nil {
		return fmt.Errorf("tenant: %w", err)
	}
	if tn.Status.TenantStatus != "NORMAL" {
		return fmt.Errorf("tenant %q", tn.Status.TenantStatus)
	}
	return nil
}

// chaosServersHeld checks that OceanBase lists exactly the servers the
// cluster's status does, each ACTIVE and serving, each with its pod: a
// server whose pod went while OceanBase held it would be listed without
// one, or INACTIVE.
func (o *obDataScenario) chaosServersHeld() error {
	rows, err := o.sqlAs("root", o.rootPassword, "SELECT SVR_IP, SVR_PORT, ZONE, STATUS, START_SERVICE_TIME FROM oceanbase.DBA_OB_SERVERS")
	if err != nil {
		return fmt.Errorf("reading DBA_OB_SERVERS: %w", err)
	}
	listed := map[string][]string{}
	for _, r := range rows {
		if len(r) == 5 {
			listed[r[0]+":"+r[1]] = r[2:]
		}
	}
	ob := &obv1.OBCluster{}
	if err := o.c.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: obName}, ob); err != nil {
		return err
	}
	if len(listed) != len(ob.Status.Servers) {
		return fmt.Errorf("OceanBase lists %d servers %v, the cluster has %d", len(listed), listed, len(ob.Status.Servers))
	}
	for _, s := range ob.Status.Servers {
		got, ok := listed[s.Address]
		if !ok || got[0] != s.Zone || got[1] != "ACTIVE" || got[2] == "NULL" {
			return fmt.Errorf("server %s (%s in %s): OceanBase says %v", s.Address, s.Pod, s.Zone, got)
		}
		if _, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), s.Pod, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("server %s, which OceanBase holds: pod %s: %w", s.Address, s.Pod, err)
		}
	}
	return nil
}

// chaosSlow delays every statement by delay on every observer (obsim's
// faults knob), for d, then clears the knob: OceanBase answering slowly,
// to the operator and the writer alike. An observer that does not answer
// (killed meanwhile) is passed over.
func (o *obDataScenario) chaosSlow(ctx context.Context, m *obChaosModel, delay, d time.Duration) (string, error) {
	set := func(patch string, within time.Duration) int {
		n := 0
		for _, pod := range m.observers() {
			if waitFor(within, func(context.Context) error {
				out, err := kubectl("exec", "-n", o.ns, "client", "--", "/smoke", "obsim-knobs", "--server", pod+":2882", patch)
				if err != nil {
					return fmt.Errorf("%w: %s", err, out)
				}
				return nil
			}) == nil {
				n++
			}
		}
		return n
	}
	n := set(fmt.Sprintf(`{"faults":[{"match":".","delay":%q}]}`, delay.Round(100*time.Millisecond)), 0)
	sleep(ctx, d)
	// A knob left set would slow the rest of the run: the clearing is
	// retried (a pod killed meanwhile came back without it).
	cleared := set(`{"faults":null}`, 30*time.Second)
	return fmt.Sprintf("slowed every statement by %s on %d observers for %s (cleared on %d)", delay.Round(100*time.Millisecond), n, d.Round(time.Second), cleared), nil
}
