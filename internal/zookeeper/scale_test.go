package zookeeper

import (
	"slices"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// TestMemberChangeMadeBy checks when a change whose answer was lost is
// found made in the configuration read afterwards, so that it is reported
// once and only then.
func TestMemberChangeMadeBy(t *testing.T) {
	cfg := func(version int64, ids ...int) zkclient.Config {
		c := zkclient.Config{Version: version, Members: map[int]zkclient.Member{}}
		for _, id := range ids {
			c.Members[id] = zkclient.Member{ID: id}
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		change memberChange
		after  zkclient.Config
		want   bool
	}{
		{"removal made", memberChange{remove: 3, from: 0x100}, cfg(0x200, 1, 2), true},
		{"removal not made", memberChange{remove: 3, from: 0x100}, cfg(0x100, 1, 2, 3), false},
		{"another change made instead", memberChange{remove: 3, from: 0x100}, cfg(0x200, 1, 2, 3, 4), false},
		{"addition made", memberChange{add: 4, from: 0x100}, cfg(0x200, 1, 2, 3, 4), true},
		{"addition not made", memberChange{add: 4, from: 0x100}, cfg(0x100, 1, 2, 3), false},
		{"same version, server there all along", memberChange{add: 4, from: 0x100}, cfg(0x100, 1, 2, 3, 4), false},
	} {
		if got := tc.change.madeBy(tc.after); got != tc.want {
			t.Errorf("%s: madeBy = %t, want %t", tc.name, got, tc.want)
		}
	}
	if reason, msg := (memberChange{remove: 3}).event(); reason != "MemberRemoved" || msg != "Server 3 left the ensemble" {
		t.Errorf("removal event = %s %q", reason, msg)
	}
	if reason, msg := (memberChange{add: 2}).event(); reason != "MemberAdded" || msg != "Server 2 joined the ensemble" {
		t.Errorf("addition event = %s %q", reason, msg)
	}
}

// TestScaleStepsHoldTheStatefulSet runs the scale flow's steps against an
// ensemble where no server serves (so each step stops at reading the
// membership) and checks the size each holds for Declare: change-members
// grows the StatefulSet for the server joining next, never below its size;
// resize-statefulset holds it at spec.replicas once the members are
// exactly 1..spec.replicas, and not before.
func TestScaleStepsHoldTheStatefulSet(t *testing.T) {
	c := New(Options{})
	for _, tc := range []struct {
		name    string
		step    func(*Context, *ensemble) (bool, error)
		want    int32 // spec.replicas
		sts     int32
		members []int
		before  []commonv1.HeldReplicas // held when the step runs
		held    []commonv1.HeldReplicas
	}{
		{"change-members: the joiner's pod", c.changeMembers, 5, 3, []int{1, 2, 3}, nil,
			[]commonv1.HeldReplicas{{Workload: "zk", Replicas: 4}}},
		{"change-members: the next joiner's pod", c.changeMembers, 5, 4, []int{1, 2, 3, 4},
			[]commonv1.HeldReplicas{{Workload: "zk", Replicas: 4}}, []commonv1.HeldReplicas{{Workload: "zk", Replicas: 5}}},
		{"change-members: never below the set's size", c.changeMembers, 5, 5, []int{1, 2, 3}, nil,
			[]commonv1.HeldReplicas{{Workload: "zk", Replicas: 5}}},
		{"change-members: members leave, no pod goes", c.changeMembers, 3, 5, []int{1, 2, 3, 4, 5}, nil, nil},
		{"resize-statefulset: members match", c.resizeStatefulSet, 3, 5, []int{1, 2, 3},
			[]commonv1.HeldReplicas{{Workload: "zk", Replicas: 5}}, []commonv1.HeldReplicas{{Workload: "zk", Replicas: 3}}},
		{"resize-statefulset: a member still to leave", c.resizeStatefulSet, 3, 5, []int{1, 2, 3, 4}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := testCluster(tc.want)
			op := commonv1.NewOperation(flowScale, "t", []string{stepChangeMembers, stepResize}, metav1.Now())
			op.Held = tc.before
			zk.Status.Operation = op
			secret := build.CredentialsSecret(zk, "secret")
			secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "zookeeper.steward.dev/v1alpha1", Kind: "ZookeeperCluster",
				Name: zk.Name, UID: zk.UID, Controller: ptr.To(true)}}
			cl := fake.NewClientBuilder().WithObjects(secret).Build()
			ctx := &Context{Context: t.Context(), Obj: zk, Client: cl, Reader: cl, Log: logr.Discard()}
			e := &ensemble{members: tc.members, servers: map[int]*server{},
				sts: &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(tc.sts)}}}
			done, err := tc.step(ctx, e)
			if done || err != nil {
				t.Fatalf("step = %t, %v; want it waiting for a server to serve", done, err)
			}
			if !slices.Equal(op.Held, tc.held) {
				t.Errorf("held %v, want %v", op.Held, tc.held)
			}
		})
	}
}
