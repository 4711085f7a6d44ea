package matrixone_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/build"
	s3client "github.com/stewardhq/steward/internal/s3"
	"github.com/stewardhq/steward/internal/s3/s3test"
	"github.com/stewardhq/steward/internal/testenv"
)

// The BucketClaim controller against a real kube-apiserver (envtest) and
// a real S3 store (versitygw, internal/s3/s3test): the buckets it makes
// and the objects it deletes are the store's. No webhook runs on this API
// server, so two overlapping claims can be created, as two creates racing
// past admission would be; TestBucketClaimAdmission runs the webhook.

// credentialsSecret is the name of the Secret of the store's keys.
const credentialsSecret = "s3-keys"

// claimEnv starts a versitygw server and the MatrixOne controllers, and
// writes the server's keys into the credentials Secret.
func claimEnv(t *testing.T, opts func(*matrixone.Options)) (client.Client, string, *s3test.Server) {
	t.Helper()
	srv := s3test.Start(t)
	if opts == nil {
		opts = func(*matrixone.Options) {}
	}
	c, ns, _ := setupWith(t, opts)
	writeKeys(t, c, ns, srv)
	return c, ns, srv
}

// writeKeys writes the server's keys into the credentials Secret.
func writeKeys(t *testing.T, c client.Client, ns string, srv *s3test.Server) {
	t.Helper()
	keys := srv.Credentials()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: credentialsSecret},
		StringData: map[string]string{build.EnvAccessKeyID: keys.AccessKeyID, build.EnvSecretAccessKey: keys.SecretAccessKey}}
	if err := c.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

// newClaim is a claim on bucket/prefix of srv (any endpoint when srv is
// nil), with the credentials Secret.
func newClaim(ns, name string, srv *s3test.Server, bucket, prefix string, policy commonv1.ReclaimPolicy) *mov1.BucketClaim {
	endpoint := "http://s3.steward-s3.svc:7070"
	if srv != nil {
		endpoint = srv.Endpoint()
	}
	return &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.BucketClaimSpec{
		S3: mov1.S3Storage{Endpoint: endpoint, Bucket: bucket, KeyPrefix: prefix, Region: s3test.Region,
			PathStyle: true, CredentialsSecret: credentialsSecret},
		ReclaimPolicy: policy,
	}}
}

// claimLogSet is a LogSet of one store whose shared storage is the claim.
func claimLogSet(ns, name, claim string) *mov1.LogSet {
	return &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mov1.LogSetSpec{Replicas: 1, SharedStorage: mov1.SharedStorage{BucketClaim: claim}}}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := client.IgnoreNotFound(c.Delete(t.Context(), o)); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s to be gone", obj.GetName()), func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
}

func claimOf(t *testing.T, c client.Client, ns, name string) *mov1.BucketClaim {
	t.Helper()
	return get2(t, c, ns, name, &mov1.BucketClaim{})
}

// claimSays describes the claim's phase, binding and Ready condition.
func claimSays(b *mov1.BucketClaim) string {
	bound := "-"
	if bt := b.Status.BoundTo; bt != nil {
		bound = bt.Name + "/" + string(bt.UID)
	}
	return fmt.Sprintf("phase %s, bound to %s, Ready %s", b.Status.Phase, bound, condition(b, framework.ConditionReady))
}

// waitClaim waits until the claim name satisfies ok, and returns it.
func waitClaim(t *testing.T, c client.Client, ns, name, what string, ok func(b *mov1.BucketClaim) bool) *mov1.BucketClaim {
	t.Helper()
	var last *mov1.BucketClaim
	eventually(t, "the claim "+name+" "+what, func() (bool, string) {
		last = claimOf(t, c, ns, name)
		return ok(last), claimSays(last)
	})
	return last
}

// inPhase is a waitClaim condition: the claim is in phase (bound to l,
// when l is not nil).
func inPhase(phase mov1.BucketClaimPhase, l *mov1.LogSet) func(b *mov1.BucketClaim) bool {
	return func(b *mov1.BucketClaim) bool {
		return b.Status.Phase == phase && (l == nil || b.BoundToLogSet(l))
	}
}

// storeClient is a client of bucket/prefix on srv with its keys.
func storeClient(t *testing.T, srv *s3test.Server, bucket, prefix string) *s3client.Client {
	t.Helper()
	cl, err := s3client.New(srv.Location(bucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// putObjects writes n small objects under dir of bucket/prefix, eight at
// a time.
func putObjects(t *testing.T, srv *s3test.Server, bucket, prefix, dir string, n int) {
	t.Helper()
	cl := storeClient(t, srv, bucket, prefix)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := cl.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	names := make(chan string, n)
	for i := range n {
		names <- fmt.Sprintf("%s/obj-%05d", dir, i)
	}
	close(names)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if err := cl.Put(ctx, name, []byte(name)); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// countObjects counts the objects under bucket/prefix.
func countObjects(t *testing.T, srv *s3test.Server, bucket, prefix string) int {
	t.Helper()
	cl := storeClient(t, srv, bucket, prefix)
	n, after := 0, ""
	for {
		page, err := cl.ListPrefix(t.Context(), "", s3client.ListOptions{After: after})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Objects)
		if page.Next == "" {
			return n
		}
		after = page.Next
	}
}

// events returns the notes of the Events of reason about the object name.
func events(t *testing.T, c client.Client, ns, name, reason string) []string {
	t.Helper()
	var list corev1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			notes = append(notes, e.Message)
		}
	}
	return notes
}

// waitEvent waits for an Event of reason about name whose note has want.
func waitEvent(t *testing.T, c client.Client, ns, name, reason, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("an Event %s on %s", reason, name), func() (bool, string) {
		notes := events(t, c, ns, name, reason)
		return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }), strings.Join(notes, " | ")
	})
}

// runClaimPod plays a pod of the set whose StatefulSet is sts, which
// mounts the claim: it carries the claim's label.
func runClaimPod(t *testing.T, c client.Client, ns, name, claim string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{build.LabelBucketClaim: claim}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mo", Image: "mo"}}}}
	create(t, c, pod)
	return pod
}

func TestBucketClaimMakesTheBucket(t *testing.T) {
	srv := s3test.Start(t)
	c, ns, _ := setup(t)
	// The keys come later: Pending until they do.
	create(t, c, newClaim(ns, "data", srv, "mo-data", "team/c1", ""))
	b := waitClaim(t, c, ns, "data", "Pending for want of its keys", inPhase(mov1.BucketClaimPending, nil))
	if got := condition(b, mov1.ConditionBucketReady); !strings.Contains(got, "False "+mov1.ReasonCredentialsMissing) ||
		!strings.Contains(got, "the credentials Secret s3-keys does not exist") {
		t.Errorf("BucketReady is %q", got)
	}
	writeKeys(t, c, ns, srv)
	b = waitClaim(t, c, ns, "data", "Available", inPhase(mov1.BucketClaimAvailable, nil))
	for typ, want := range map[string]string{
		mov1.ConditionBucketReady: "True " + mov1.ReasonBucketExists,
		mov1.ConditionBound:       "False " + mov1.ReasonAvailable + ": no LogSet names the claim",
		framework.ConditionReady:  "True " + mov1.ReasonAvailable,
	} {
		if got := condition(b, typ); !strings.HasPrefix(got, want) {
			t.Errorf("%s is %q, want %q", typ, got, want)
		}
	}
	if b.Spec.ReclaimPolicy != commonv1.ReclaimRetain {
		t.Errorf("reclaimPolicy is %q, want the schema's default Retain", b.Spec.ReclaimPolicy)
	}
	// The bucket is the store's: a directory of its POSIX root.
	if _, err := storeClient(t, srv, "mo-data", "").IsEmpty(t.Context(), ""); err != nil {
		t.Errorf("the bucket: %v", err)
	}
	waitEvent(t, c, ns, "data", mov1.EventBucketCreated, "Created the bucket mo-data at "+srv.Endpoint())
}

// TestBucketClaimConflict creates two overlapping claims, as two creates
// racing past admission would: the later is in Conflict, is never bound,
// and its deletion leaves the older claim's objects alone.
func TestBucketClaimConflict(t *testing.T) {
	c, ns, srv := claimEnv(t, nil)
	create(t, c, newClaim(ns, "first", srv, "mo-data", "team", commonv1.ReclaimDelete))
	waitClaim(t, c, ns, "first", "Available", inPhase(mov1.BucketClaimAvailable, nil))
	// Created a second later, so that it is the later one by time.
	time.Sleep(1100 * time.Millisecond)
	create(t, c, newClaim(ns, "second", srv, "mo-data", "team/c1", commonv1.ReclaimDelete))
	b := waitClaim(t, c, ns, "second", "in Conflict", inPhase(mov1.BucketClaimConflict, nil))
	for _, typ := range []string{framework.ConditionReady, mov1.ConditionBound} {
		if got := condition(b, typ); !strings.Contains(got, "False "+mov1.ReasonConflict) ||
			!strings.Contains(got, "overlaps the BucketClaim "+ns+"/first") {
			t.Errorf("%s is %q", typ, got)
		}
	}
	// A LogSet that names it waits, saying why, and never binds it.
	log := claimLogSet(ns, "log", "second")
	create(t, c, log)
	eventually(t, "the LogSet to say the claim serves no LogSet", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "False "+mov1.ReasonBucketClaimInUse) && strings.Contains(got, "Conflict"), got
	})
	if b := claimOf(t, c, ns, "second"); b.Status.BoundTo != nil || b.Status.Phase != mov1.BucketClaimConflict {
		t.Fatalf("the claim in Conflict: %s", claimSays(b))
	}
	if get(t, c, ns, "log", &appsv1.StatefulSet{}) {
		t.Error("the LogSet made its StatefulSet on a claim in Conflict")
	}
	// The older claim's objects, under the later one's prefix, survive the
	// later one's deletion under Delete.
	putObjects(t, srv, "mo-data", "team", "c1", 3)
	remove(t, c, log, claimOf(t, c, ns, "second"))
	waitGone(t, c, &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}})
	waitEvent(t, c, ns, "second", mov1.EventObjectsKept, "overlaps the BucketClaim "+ns+"/first")
	if n := countObjects(t, srv, "mo-data", "team"); n != 3 {
		t.Errorf("%d objects left under team, want 3", n)
	}
	// The older claim was never in Conflict.
	if b := claimOf(t, c, ns, "first"); b.Status.Phase != mov1.BucketClaimAvailable {
		t.Errorf("the older claim: %s", claimSays(b))
	}
}

// TestBucketClaimBinding binds a claim to the first LogSet that names it,
// for life; refuses a second LogSet; releases the claim when its LogSet
// goes, keeping the objects under Retain; and binds it again to a new
// LogSet (rebinding).
func TestBucketClaimBinding(t *testing.T) {
	c, ns, srv := claimEnv(t, nil)
	// The LogSet first: it waits for the claim.
	first := claimLogSet(ns, "first", "data")
	create(t, c, first)
	eventually(t, "the LogSet to wait for the claim", func() (bool, string) {
		got := condition(get2(t, c, ns, "first", &mov1.LogSet{}), framework.ConditionReady)
		return strings.HasPrefix(got, "False "+mov1.ReasonWaitingForSharedStorage) && strings.Contains(got, "waiting for the BucketClaim data"), got
	})
	create(t, c, newClaim(ns, "data", srv, "mo-data", "team/c1", commonv1.ReclaimRetain))
	first = get2(t, c, ns, "first", &mov1.LogSet{})
	b := waitClaim(t, c, ns, "data", "bound to the first LogSet", inPhase(mov1.BucketClaimBound, first))
	if got := condition(b, mov1.ConditionBound); !strings.HasPrefix(got, "True "+mov1.ReasonBound+": bound to the LogSet first") {
		t.Errorf("Bound is %q", got)
	}
	waitEvent(t, c, ns, "data", mov1.ReasonBound, "bound to the LogSet first")

	// The LogSet renders the claim's location: its configuration, its
	// pods' keys and the claim's label; and so does a TNSet of it.
	sts := &appsv1.StatefulSet{}
	eventually(t, "the LogSet's StatefulSet", func() (bool, string) { return get(t, c, ns, "first", sts), "" })
	checkRendersClaim(t, c, ns, sts, srv)
	create(t, c, &mov1.TNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tn"}, Spec: mov1.TNSetSpec{LogSet: "first"}})
	tn := &appsv1.StatefulSet{}
	eventually(t, "the TNSet's StatefulSet", func() (bool, string) { return get(t, c, ns, "tn", tn), "" })
	checkRendersClaim(t, c, ns, tn, srv)

	// A second LogSet naming the bound claim is refused, clearly; the
	// claim stays bound to the first.
	second := claimLogSet(ns, "second", "data")
	create(t, c, second)
	eventually(t, "the second LogSet to be refused", func() (bool, string) {
		got := condition(get2(t, c, ns, "second", &mov1.LogSet{}), framework.ConditionReady)
		return strings.HasPrefix(got, "False "+mov1.ReasonBucketClaimInUse) && strings.Contains(got, "bound to the LogSet first"), got
	})
	if get(t, c, ns, "second", &appsv1.StatefulSet{}) {
		t.Error("the second LogSet made its StatefulSet")
	}
	remove(t, c, second)
	waitGone(t, c, second)

	// The first LogSet goes: Released, the objects kept (Retain).
	putObjects(t, srv, "mo-data", "team/c1", "data", 5)
	remove(t, c, first, &mov1.TNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tn"}})
	waitGone(t, c, first)
	b = waitClaim(t, c, ns, "data", "Released", inPhase(mov1.BucketClaimReleased, nil))
	if got := condition(b, framework.ConditionReady); !strings.HasPrefix(got, "True "+mov1.ReasonReleased) ||
		!strings.Contains(got, "reclaimPolicy Retain: the objects stay") {
		t.Errorf("Ready of the released claim is %q", got)
	}
	if b.Status.BoundTo == nil || b.Status.BoundTo.UID != first.UID {
		t.Errorf("boundTo of the released claim: %+v, want the gone LogSet's", b.Status.BoundTo)
	}
	time.Sleep(time.Second) // a few passes: nothing is deleted
	if n := countObjects(t, srv, "mo-data", "team/c1"); n != 5 {
		t.Errorf("%d objects under the released claim, want 5", n)
	}

	// A new LogSet that names it binds it, and finds the objects.
	third := claimLogSet(ns, "third", "data")
	create(t, c, third)
	third = get2(t, c, ns, "third", &mov1.LogSet{})
	waitClaim(t, c, ns, "data", "bound to the third LogSet", inPhase(mov1.BucketClaimBound, third))
	if n := countObjects(t, srv, "mo-data", "team/c1"); n != 5 {
		t.Errorf("%d objects after rebinding, want 5", n)
	}
}

// checkRendersClaim checks that the StatefulSet sts renders the claim's
// location: the keys from the credentials Secret, the claim's label on
// the pods, and the bucket in the configuration template.
func checkRendersClaim(t *testing.T, c client.Client, ns string, sts *appsv1.StatefulSet, srv *s3test.Server) {
	t.Helper()
	tmpl := sts.Spec.Template
	if got := tmpl.Labels[build.LabelBucketClaim]; got != "data" {
		t.Errorf("%s: the pods' claim label is %q", sts.Name, got)
	}
	env := tmpl.Spec.Containers[0].Env
	if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool {
		return e.Name == build.EnvAccessKeyID && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == credentialsSecret
	}) {
		t.Errorf("%s: no access key from %s in %v", sts.Name, credentialsSecret, env)
	}
	var config string
	for _, v := range tmpl.Spec.Volumes {
		if v.ConfigMap != nil && v.Name == build.ConfigVolume {
			cm := get2(t, c, ns, v.ConfigMap.Name, &corev1.ConfigMap{})
			for _, text := range cm.Data {
				config += text
			}
		}
	}
	for _, want := range []string{"mo-data", srv.Endpoint(), "team/c1/data", "is-minio"} {
		if !strings.Contains(config, want) {
			t.Errorf("%s: the configuration lacks %s:\n%s", sts.Name, want, config)
		}
	}
}

// TestBucketClaimDelete deletes the objects of a claim released under
// Delete, several batches of them, once the pods that mounted it are gone,
// and then the claim; the objects outside its prefix stay.
func TestBucketClaimDelete(t *testing.T) {
	c, ns, srv := claimEnv(t, nil)
	create(t, c, newClaim(ns, "data", srv, "mo-data", "team/c1", commonv1.ReclaimDelete), claimLogSet(ns, "log", "data"))
	log := get2(t, c, ns, "log", &mov1.LogSet{})
	waitClaim(t, c, ns, "data", "bound", inPhase(mov1.BucketClaimBound, log))
	// 2500 objects: three bulk deletes of 1000. Beside them, a sibling
	// whose name the prefix begins, another prefix, and the bucket's root.
	putObjects(t, srv, "mo-data", "team/c1", "data", 2500)
	putObjects(t, srv, "mo-data", "team/c10", "data", 2)
	putObjects(t, srv, "mo-data", "team/c2", "data", 2)
	putObjects(t, srv, "mo-data", "", "root", 1)
	pod := runClaimPod(t, c, ns, "log-0", "data")

	remove(t, c, log)
	waitGone(t, c, log)
	b := waitClaim(t, c, ns, "data", "waiting for its pod", func(b *mov1.BucketClaim) bool {
		return b.Status.Phase == mov1.BucketClaimReleased &&
			strings.HasPrefix(condition(b, framework.ConditionReady), "False "+mov1.ReasonWaitingForPods)
	})
	if got := condition(b, framework.ConditionReady); !strings.Contains(got, "first log-0") {
		t.Errorf("Ready is %q", got)
	}
	time.Sleep(time.Second)
	if n := countObjects(t, srv, "mo-data", "team/c1"); n != 2500 {
		t.Fatalf("%d objects left while a pod mounts the claim, want 2500", n)
	}

	remove(t, c, pod)
	waitGone(t, c, &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}})
	if n := countObjects(t, srv, "mo-data", "team/c1"); n != 0 {
		t.Errorf("%d objects left under the claim's prefix", n)
	}
	for prefix, want := range map[string]int{"team/c10": 2, "team/c2": 2, "": 5} {
		if n := countObjects(t, srv, "mo-data", prefix); n != want {
			t.Errorf("%d objects under %q, want %d", n, prefix, want)
		}
	}
	waitEvent(t, c, ns, "data", mov1.EventReleasedClaimDeleted, "released by the LogSet log (reclaimPolicy Delete)")
	waitEvent(t, c, ns, "data", mov1.EventEmptyingPrefix, "s3://mo-data/team/c1/")
	waitEvent(t, c, ns, "data", mov1.EventPrefixEmptied, "Deleted 2500 objects")
}

// TestBucketClaimDeletionWaitsForItsLogSet deletes a bound claim: it
// stays, saying why, until its LogSet is gone, then empties its prefix
// (Delete) and goes.
func TestBucketClaimDeletionWaitsForItsLogSet(t *testing.T) {
	c, ns, srv := claimEnv(t, nil)
	create(t, c, newClaim(ns, "data", srv, "mo-data", "c1", commonv1.ReclaimDelete), claimLogSet(ns, "log", "data"))
	log := get2(t, c, ns, "log", &mov1.LogSet{})
	waitClaim(t, c, ns, "data", "bound", inPhase(mov1.BucketClaimBound, log))
	putObjects(t, srv, "mo-data", "c1", "data", 10)

	remove(t, c, claimOf(t, c, ns, "data"))
	b := waitClaim(t, c, ns, "data", "blocked", func(b *mov1.BucketClaim) bool {
		return b.Status.Phase == mov1.BucketClaimDeleting && strings.HasPrefix(condition(b, framework.ConditionReady), "False "+mov1.ReasonDeletionBlocked)
	})
	if got := condition(b, framework.ConditionReady); !strings.Contains(got, "the LogSet log is bound to the claim") {
		t.Errorf("Ready is %q", got)
	}
	// The LogSet keeps its storage meanwhile.
	if got := condition(logSet(t, c, ns), framework.ConditionReady); strings.Contains(got, mov1.ReasonBucketClaimInUse) {
		t.Errorf("the LogSet lost its claim: %s", got)
	}
	time.Sleep(time.Second)
	if n := countObjects(t, srv, "mo-data", "c1"); n != 10 {
		t.Fatalf("%d objects left while the claim is bound, want 10", n)
	}
	remove(t, c, log)
	waitGone(t, c, b)
	if n := countObjects(t, srv, "mo-data", "c1"); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// TestBucketClaimDeletionResumes stops the operator in the middle of
// emptying a prefix, and has the new operator's first passes fail (the
// credentials Secret is gone): the deletion resumes where it stopped once
// the Secret is back, and ends.
func TestBucketClaimDeletionResumes(t *testing.T) {
	c, ns, srv := claimEnv(t, func(o *matrixone.Options) { o.ClaimDeleteBatch, o.ClaimDeleteBatches = 100, 1 })
	create(t, c, newClaim(ns, "data", srv, "mo-data", "c1", commonv1.ReclaimDelete), claimLogSet(ns, "log", "data"))
	log := get2(t, c, ns, "log", &mov1.LogSet{})
	waitClaim(t, c, ns, "data", "bound", inPhase(mov1.BucketClaimBound, log))
	putObjects(t, srv, "mo-data", "c1", "data", 2500)
	remove(t, c, log)

	waitClaim(t, c, ns, "data", "partly emptied", func(b *mov1.BucketClaim) bool {
		return b.Status.Deletion != nil && b.Status.Deletion.ObjectsDeleted >= 300
	})
	restartOperator(t, ns, func() {
		b := claimOf(t, c, ns, "data")
		if d := b.Status.Deletion; d == nil || d.CompletedAt != nil || d.StartedAt == nil {
			t.Fatalf("the deletion before the restart: %+v", d)
		}
		t.Logf("stopped after %d objects", b.Status.Deletion.ObjectsDeleted)
		remove(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: credentialsSecret}})
	})
	b := waitClaim(t, c, ns, "data", "failing for want of its keys", func(b *mov1.BucketClaim) bool {
		return b.Status.Deletion != nil && strings.Contains(b.Status.Deletion.LastError, "the credentials Secret s3-keys does not exist")
	})
	if got := condition(b, framework.ConditionReady); !strings.Contains(got, "False "+mov1.ReasonEmptying) ||
		!strings.Contains(got, "set reclaimPolicy Retain to let the claim go") {
		t.Errorf("Ready is %q", got)
	}
	left := countObjects(t, srv, "mo-data", "c1")
	if left == 0 || left == 2500 {
		t.Fatalf("%d objects left after the restart, want some deleted and some left", left)
	}
	writeKeys(t, c, ns, srv)
	waitGone(t, c, b)
	if n := countObjects(t, srv, "mo-data", "c1"); n != 0 {
		t.Errorf("%d objects left", n)
	}
	// One Event at the start: the new operator resumed, it did not start
	// over.
	waitEvent(t, c, ns, "data", mov1.EventPrefixEmptied, "none is left")
	if notes := events(t, c, ns, "data", mov1.EventEmptyingPrefix); len(notes) != 1 {
		t.Errorf("EmptyingPrefix Events: %q, want one", notes)
	}
}

// TestBucketClaimAdmission writes claims through a real kube-apiserver
// that calls the system's webhooks: an overlapping location is refused
// naming the other claim and spec.s3.keyPrefix, in any namespace; a
// sibling or another bucket is admitted; so is a change of reclaimPolicy.
func TestBucketClaimAdmission(t *testing.T) {
	c := hookServer.WebhookClient(t, newScheme(), matrixone.SetupWebhooks)
	ns := testenv.Namespace(t, c, "mo-claims-")
	other := testenv.Namespace(t, c, "mo-claims-other-")
	// The store is this test's own (claims outlive a test on the shared
	// API server, and another run's would overlap).
	at := func(ns, name, bucket, prefix string) *mov1.BucketClaim {
		b := newClaim(ns, name, nil, bucket, prefix, "")
		b.Spec.S3.Endpoint = "http://s3." + ns + ".svc:7070"
		return b
	}
	create(t, c, at(ns, "base", "mo-data", "team/c1"))
	// The webhook reads the claims from its manager's cache, which sees
	// the new claim a moment later (the controller's check covers that
	// moment, TestBucketClaimConflict): wait until it does.
	eventually(t, "the webhook to know the claim", func() (bool, string) {
		probe := at(ns, "probe", "mo-data", "team/c1")
		err := c.Create(t.Context(), probe)
		if err == nil {
			remove(t, c, probe)
			return false, "admitted"
		}
		return apierrors.IsInvalid(err), err.Error()
	})
	n := 0
	for _, tc := range []struct {
		name, ns, bucket, prefix string
		refused                  bool
	}{
		{"the same prefix", ns, "mo-data", "team/c1", true},
		{"the same prefix, slashes aside", ns, "mo-data", "/team/c1/", true},
		{"a parent", ns, "mo-data", "team", true},
		{"the whole bucket", ns, "mo-data", "", true},
		{"a child", ns, "mo-data", "team/c1/data", true},
		{"the same prefix in another namespace", other, "mo-data", "team/c1", true},
		{"a sibling", ns, "mo-data", "team/c2", false},
		{"a sibling that shares characters", ns, "mo-data", "team/c10", false},
		{"another bucket", ns, "mo-data2", "team/c1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n++
			claim := at(tc.ns, fmt.Sprintf("claim%d", n), tc.bucket, tc.prefix)
			claim.Spec.S3.Endpoint = "http://s3." + ns + ".svc:7070" // one store, whatever the namespace
			err := c.Create(t.Context(), claim)
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			requireInvalid(t, err, "spec.s3.keyPrefix")
			if !strings.Contains(err.Error(), "overlaps the BucketClaim "+ns+"/base") {
				t.Errorf("%q does not name the other claim", err)
			}
		})
	}
	// A change of reclaimPolicy: the claim keeps its location.
	b := &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"}}
	testenv.Update(t, c, b, func(b *mov1.BucketClaim) { b.Spec.ReclaimPolicy = commonv1.ReclaimDelete })
	// A credentials Secret no Secret can be named.
	bad := at(ns, "bad", "mo-data3", "x")
	bad.Spec.S3.CredentialsSecret = "S3_Keys"
	requireInvalid(t, c.Create(t.Context(), bad), "spec.s3.credentialsSecret")

	// A LogSet's or a cluster's template of a claim that would overlap
	// base is refused, naming the template's prefix; a template of a
	// claim that exists is not (the claim is used as it is).
	template := func(prefix string) mov1.SharedStorage {
		return mov1.SharedStorage{BucketClaim: "templated", BucketClaimTemplate: &at(ns, "", "mo-data", prefix).Spec}
	}
	const path = "spec.sharedStorage.bucketClaimTemplate.s3.keyPrefix"
	l := claimLogSet(ns, "log", "")
	l.Spec.SharedStorage = template("team")
	err := c.Create(t.Context(), l)
	requireInvalid(t, err, path)
	if !strings.Contains(err.Error(), "overlaps the BucketClaim "+ns+"/base") {
		t.Errorf("%q does not name the other claim", err)
	}
	mo := newCluster(ns, "a")
	mo.Spec.SharedStorage = template("team/c1/x")
	requireInvalid(t, c.Create(t.Context(), mo), path)
	l.Spec.SharedStorage = template("team/c3")
	create(t, c, l)
	l2 := claimLogSet(ns, "log2", "")
	l2.Spec.SharedStorage = template("team")
	l2.Spec.SharedStorage.BucketClaim = "base"
	create(t, c, l2)
	// Without the claim's name, a template is refused by the schema.
	l3 := claimLogSet(ns, "log3", "")
	l3.Spec.SharedStorage = mov1.SharedStorage{S3: &at(ns, "", "mo-data4", "x").Spec.S3, BucketClaimTemplate: &at(ns, "", "mo-data4", "y").Spec}
	requireInvalid(t, c.Create(t.Context(), l3), "spec.sharedStorage.bucketClaimTemplate")
}

// TestLogSetMakesTheBucketClaimOfItsTemplate: a LogSet whose shared storage
// is a claim of its template makes the claim (no owner, the shared
// component's labels) and binds it; once the LogSet is gone, the claim's
// own policy decides: Retain keeps it Released and a LogSet re-created
// under the name binds it again, with its objects; Delete empties its
// prefix and deletes it.
func TestLogSetMakesTheBucketClaimOfItsTemplate(t *testing.T) {
	for _, policy := range []commonv1.ReclaimPolicy{commonv1.ReclaimRetain, commonv1.ReclaimDelete} {
		t.Run(string(policy), func(t *testing.T) {
			c, ns, srv := claimEnv(t, nil)
			newLog := func() *mov1.LogSet {
				l := claimLogSet(ns, "log", "data")
				l.Spec.SharedStorage.BucketClaimTemplate = &newClaim(ns, "", srv, "mo-data", "team/c1", policy).Spec
				return l
			}
			log := newLog()
			create(t, c, log)
			log = get2(t, c, ns, "log", &mov1.LogSet{})
			eventually(t, "the claim made", func() (bool, string) { return get(t, c, ns, "data", &mov1.BucketClaim{}), "" })
			b := waitClaim(t, c, ns, "data", "bound to the LogSet", inPhase(mov1.BucketClaimBound, log))
			if len(b.OwnerReferences) != 0 || !maps.Equal(b.Labels, build.Labels("log", build.ComponentShared)) ||
				b.Spec.ReclaimPolicy != policy || b.Spec.S3.Endpoint != srv.Endpoint() {
				t.Errorf("the claim made: owners %v, labels %v, spec %+v", b.OwnerReferences, b.Labels, b.Spec)
			}
			waitEvent(t, c, ns, "log", mov1.EventSharedClaimCreated, "Created the BucketClaim data (")
			sts := &appsv1.StatefulSet{}
			eventually(t, "the LogSet's StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "" })
			checkRendersClaim(t, c, ns, sts, srv)
			putObjects(t, srv, "mo-data", "team/c1", "data", 3)

			remove(t, c, log)
			waitGone(t, c, log)
			if policy == commonv1.ReclaimDelete {
				waitGone(t, c, &mov1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}})
				if n := countObjects(t, srv, "mo-data", "team/c1"); n != 0 {
					t.Errorf("%d objects left under the deleted claim's prefix", n)
				}
				return
			}
			waitClaim(t, c, ns, "data", "Released", inPhase(mov1.BucketClaimReleased, nil))
			again := newLog()
			create(t, c, again)
			again = get2(t, c, ns, "log", &mov1.LogSet{})
			waitClaim(t, c, ns, "data", "bound to the re-created LogSet", inPhase(mov1.BucketClaimBound, again))
			if n := countObjects(t, srv, "mo-data", "team/c1"); n != 3 {
				t.Errorf("%d objects under the re-bound claim, want 3", n)
			}
		})
	}
}
