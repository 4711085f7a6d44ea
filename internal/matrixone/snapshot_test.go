package matrixone_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/internal/testenv"
)

// The Snapshot and SnapshotRestore controllers against a real
// kube-apiserver. envtest runs no MatrixOne: fakeSnapshots stands in for
// its snapshot statements, as mo_catalog.mo_snapshots and mo_account
// would answer them (the e2e runs the real ones).

// fakeSnapshots holds snapshots and accounts as MatrixOne would.
type fakeSnapshots struct {
	mu        sync.Mutex
	snapshots map[string]mosql.SnapshotInfo
	accounts  map[string]bool
	restores  []string      // "account<-snapshot->target", each committed
	hold      chan struct{} // when set, a restore waits for it to close
	held      int           // the restores waiting for hold now
	refuse    []error       // the answers of the next restores, before any commits
	password  string        // the password of the last call
}

func newFakeSnapshots(accounts ...string) *fakeSnapshots {
	f := &fakeSnapshots{snapshots: map[string]mosql.SnapshotInfo{}, accounts: map[string]bool{}}
	for _, a := range accounts {
		f.accounts[a] = true
	}
	return f
}

func (f *fakeSnapshots) CreateSnapshot(_ context.Context, t mosql.Target, name, account string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.password = t.Password
	if _, ok := f.snapshots[name]; ok {
		return fmt.Errorf("snapshot %s already exists", name)
	}
	if !f.accounts[account] {
		return fmt.Errorf("account %s does not exist", account)
	}
	f.snapshots[name] = mosql.SnapshotInfo{Name: name, Level: "account", Account: account, TS: time.Now().UnixNano()}
	return nil
}

func (f *fakeSnapshots) GetSnapshot(_ context.Context, t mosql.Target, name string) (*mosql.SnapshotInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.password = t.Password
	if s, ok := f.snapshots[name]; ok {
		return &s, nil
	}
	return nil, nil
}

func (f *fakeSnapshots) DropSnapshot(_ context.Context, _ mosql.Target, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.snapshots, name)
	return nil
}

func (f *fakeSnapshots) AccountExists(_ context.Context, _ mosql.Target, account string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.accounts[account], nil
}

func (f *fakeSnapshots) RestoreAccount(ctx context.Context, _ mosql.Target, account, snapshot, target string) error {
	f.mu.Lock()
	hold := f.hold
	if hold != nil {
		f.held++
	}
	f.mu.Unlock()
	if hold != nil {
		defer func() { f.mu.Lock(); f.held--; f.mu.Unlock() }()
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refuse) > 0 {
		err := f.refuse[0]
		f.refuse = f.refuse[1:]
		return err
	}
	if s, ok := f.snapshots[snapshot]; !ok || s.Account != account {
		return fmt.Errorf("snapshot %s of %s does not exist", snapshot, account)
	}
	f.restores = append(f.restores, account+"<-"+snapshot+"->"+target)
	return nil
}

// holdRestores makes the restores started from now on wait until the
// returned function is called.
func (f *fakeSnapshots) holdRestores() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hold := make(chan struct{})
	f.hold = hold
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		close(hold)
		f.hold = nil
	}
}

// waiting is how many restores are waiting for a hold to be released:
// sent, and not answered.
func (f *fakeSnapshots) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

func (f *fakeSnapshots) put(s mosql.SnapshotInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots[s.Name] = s
}

func (f *fakeSnapshots) has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.snapshots[name]
	return ok
}

func (f *fakeSnapshots) restored() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.restores)
}

func newSnapshot(ns, name, account string) *mov1.Snapshot {
	return &mov1.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mov1.SnapshotSpec{Cluster: "mo", Account: account}}
}

func newSnapshotRestore(ns, name, snapshot, target string) *mov1.SnapshotRestore {
	return &mov1.SnapshotRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mov1.SnapshotRestoreSpec{Snapshot: snapshot, TargetAccount: target, Overwrite: true}}
}

// waitReady waits until obj's Ready condition starts with want, and
// returns it.
func waitReady[T framework.Object](t *testing.T, c client.Client, obj T, want string) T {
	t.Helper()
	eventually(t, fmt.Sprintf("%s Ready %q", obj.GetName(), want), func() (bool, string) {
		get(t, c, obj.GetNamespace(), obj.GetName(), obj)
		got := condition(obj, framework.ConditionReady)
		return strings.HasPrefix(got, want), got
	})
	return obj
}

func TestSnapshot(t *testing.T) {
	sql := newFakeSnapshots("sys", "acc1")
	c, ns, _, _ := readyClusterWith(t, func(o *matrixone.Options) { o.Snapshots = sql }, "cn")

	// Taken, and read back: status says when, as MatrixOne recorded it.
	snap := newSnapshot(ns, "snap1", "acc1")
	create(t, c, snap)
	waitReady(t, c, snap, "True")
	if !sql.has("snap1") || snap.Status.SnapshotName != "snap1" || snap.Status.SnapshotTime == nil || snap.Status.SnapshotTS == "" {
		t.Errorf("the snapshot: MatrixOne has it %v, status %+v", sql.has("snap1"), snap.Status)
	}
	if sql.password == "" {
		t.Error("the statements were sent without root's password")
	}
	waitEvent(t, c, ns, "snap1", mov1.EventSnapshotTaken, "Took the snapshot snap1 of the account acc1 of mo")

	// An account the cluster does not have fails the flow.
	waitReady(t, c, create1(t, c, newSnapshot(ns, "nope", "acc9")), "False Failed: the snapshot failed at step take-snapshot: terminal error: the cluster mo has no account acc9")

	// A snapshot of the same name MatrixOne holds already, taken before
	// the Snapshot was created, is someone else's: neither adopted nor
	// dropped when the Snapshot goes.
	sql.put(mosql.SnapshotInfo{Name: "theirs", Level: "account", Account: "acc1", TS: time.Now().Add(-time.Hour).UnixNano()})
	theirs := create1(t, c, newSnapshot(ns, "theirs", "acc1"))
	waitReady(t, c, theirs, "False Failed: the snapshot failed at step take-snapshot: terminal error: MatrixOne holds a snapshot theirs already")
	remove(t, c, theirs)
	waitGone(t, c, theirs)
	if !sql.has("theirs") {
		t.Error("deleting the Snapshot dropped a snapshot it had not taken")
	}

	// Restored in place, once.
	inPlace := create1(t, c, newSnapshotRestore(ns, "in-place", "snap1", ""))
	waitReady(t, c, inPlace, "True")
	if got := sql.restored(); !slices.Equal(got, []string{"acc1<-snap1->acc1"}) {
		t.Errorf("restores: %v", got)
	}
	if inPlace.Status.TargetAccount != "acc1" || inPlace.Status.Cluster != "mo" || inPlace.Status.StartedAt == nil || inPlace.Status.CompletedAt == nil {
		t.Errorf("the restore's status: %+v", inPlace.Status)
	}
	waitEvent(t, c, ns, "in-place", mov1.EventRestored, "Restored the account acc1 from the snapshot snap1")

	// MatrixOne aborts a restore whose lock tables moved (a TN restart):
	// it is sent again and commits; one it refuses for good fails.
	sql.mu.Lock()
	sql.refuse = []error{&mysql.MySQLError{Number: 20702, Message: "lock table bind changed"}}
	sql.mu.Unlock()
	again := create1(t, c, newSnapshotRestore(ns, "again", "snap1", ""))
	waitReady(t, c, again, "True")
	if got := sql.restored(); len(got) != 2 {
		t.Errorf("restores %v, want the second committed once", got)
	}
	sql.mu.Lock()
	sql.refuse = []error{&mysql.MySQLError{Number: 20101, Message: "internal error: snapshot snap1 does not exist"}}
	sql.mu.Unlock()
	waitReady(t, c, create1(t, c, newSnapshotRestore(ns, "refused", "snap1", "")),
		"False Failed: the restore failed at step restore-account: terminal error: MatrixOne refused the restore, which did not commit")

	// Into an account that does not exist, or a non-sys snapshot into sys:
	// refused before any statement.
	waitReady(t, c, create1(t, c, newSnapshotRestore(ns, "to-missing", "snap1", "acc2")), "False Failed: the restore failed at step check-snapshot: terminal error: the cluster mo has no account acc2")
	waitReady(t, c, create1(t, c, newSnapshotRestore(ns, "to-sys", "snap1", "sys")), "False Failed: the restore failed at step check-snapshot: terminal error: the snapshot is of the account acc1")

	// The operator restarts while MatrixOne runs a restore: the restore is
	// not sent again, and says why.
	release := sql.holdRestores()
	lost := create1(t, c, newSnapshotRestore(ns, "lost", "snap1", ""))
	// Sent, not only recorded as started: the operator may restart in
	// between, and then rightly never sends it.
	eventually(t, "the restore sent", func() (bool, string) {
		get(t, c, ns, "lost", lost)
		return lost.Status.StartedAt != nil && sql.waiting() == 1, operation(lost)
	})
	restartOperator(t, ns, func() {})
	waitReady(t, c, lost, "False Failed: the restore failed at step restore-account: terminal error: the restore was started at ")
	release()
	eventually(t, "the lost restore's statement to finish", func() (bool, string) {
		return len(sql.restored()) == 3, strings.Join(sql.restored(), ", ")
	})

	// Restores of a cluster run one at a time; the Snapshot is not dropped
	// while one restores from it.
	release = sql.holdRestores()
	first := create1(t, c, newSnapshotRestore(ns, "first", "snap1", ""))
	inStep(t, "the first restore", func() framework.Object { get(t, c, ns, "first", first); return first }, "snapshot-restore", "restore-account")
	second := create1(t, c, newSnapshotRestore(ns, "second", "snap1", ""))
	waitReady(t, c, second, "False Queued: the SnapshotRestore first of the same cluster has not finished")
	remove(t, c, snap)
	waitReady(t, c, snap, "False DeletionBlocked: the SnapshotRestore ")
	release()
	waitReady(t, c, first, "True")
	// The queued restore found its Snapshot going.
	waitReady(t, c, second, "False Failed: the restore failed at step check-snapshot: terminal error: the Snapshot snap1 is being deleted")
	waitGone(t, c, snap)
	if sql.has("snap1") {
		t.Error("MatrixOne still holds the snapshot of the deleted Snapshot")
	}
	waitEvent(t, c, ns, "snap1", mov1.EventSnapshotDropped, "Dropped the snapshot snap1 from mo")
}

func TestSnapshotReadBack(t *testing.T) {
	sql := newFakeSnapshots("sys")
	c, ns, _, _ := readyClusterWith(t, func(o *matrixone.Options) { o.Snapshots = sql }, "cn")
	snap := create1(t, c, newSnapshot(ns, "snap", "sys"))
	waitReady(t, c, snap, "True")
	// Dropped outside Steward: Ready says so.
	if err := sql.DropSnapshot(t.Context(), mosql.Target{}, "snap"); err != nil {
		t.Fatal(err)
	}
	// A pass reads it (every resync; the test does not wait a minute).
	testenv.Update(t, c, snap, func(s *mov1.Snapshot) { s.Annotations = map[string]string{"test": "look again"} })
	waitReady(t, c, snap, "False Missing: MatrixOne holds no snapshot snap")
	if op := snap.Status.Operation; op == nil || op.Phase != commonv1.PhaseSucceeded {
		t.Errorf("the flow: %s", operation(snap))
	}
}

// create1 creates obj and returns it.
func create1[T client.Object](t *testing.T, c client.Client, obj T) T {
	t.Helper()
	create(t, c, obj)
	return obj
}

// A BackupSchedule of snapshots takes a Snapshot per run and keeps as many
// as its retention says: the older is deleted, and its snapshot dropped.
func TestSnapshotSchedule(t *testing.T) {
	sql := newFakeSnapshots("sys", "acc1")
	c, ns, _, _ := readyClusterWith(t, func(o *matrixone.Options) { o.Snapshots = sql }, "cn")
	s := &mov1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "every"}, Spec: mov1.BackupScheduleSpec{
		Schedule: "@every 2s", Cluster: "mo", Snapshot: &mov1.ScheduledSnapshot{Account: "acc1"},
		Retention: mov1.BackupRetention{Count: ptr.To[int32](1)},
	}}
	create(t, c, s)
	snapshots := func() []mov1.Snapshot {
		var list mov1.SnapshotList
		if err := c.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{"matrixone.steward.dev/backup-schedule": "every"}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(list.Items, func(a, b mov1.Snapshot) int { return strings.Compare(a.Name, b.Name) })
		return list.Items
	}
	var first mov1.Snapshot
	eventually(t, "the first run's Snapshot taken", func() (bool, string) {
		list := snapshots()
		if len(list) == 0 {
			return false, "none"
		}
		first = list[0]
		return first.Status.SnapshotName != "", condition(&first, framework.ConditionReady)
	})
	if first.Spec.Account != "acc1" || first.Spec.Cluster != "mo" || len(first.OwnerReferences) != 0 {
		t.Errorf("the scheduled Snapshot: spec %+v, owners %v", first.Spec, first.OwnerReferences)
	}
	// A later run is taken, and the first goes: deleted, its snapshot
	// dropped.
	waitGone(t, c, &first)
	if sql.has(first.Name) {
		t.Errorf("MatrixOne still holds %s, which the retention expired", first.Name)
	}
	testenv.Update(t, c, s, func(s *mov1.BackupSchedule) { s.Spec.Suspend = true })
	eventually(t, "the schedule's status", func() (bool, string) {
		get(t, c, ns, "every", s)
		list := snapshots()
		return len(list) == 1 && s.Status.LastBackup == list[0].Name && s.Status.Backups == 1 && s.Status.Active == "" && s.Status.NextScheduleTime == nil,
			fmt.Sprintf("%d snapshots, status %+v", len(list), s.Status)
	})
	waitEvent(t, c, ns, "every", mov1.EventBackupExpired, "Deleting the Snapshot "+first.Name+": the retention does not keep it")
}
