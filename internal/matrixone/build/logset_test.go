package build

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

func newLogSet(mutate ...func(*mov1.LogSet)) *mov1.LogSet {
	l := &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mo-log"},
		Spec: mov1.LogSetSpec{SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: "mo-shared"}}}}
	for _, m := range mutate {
		m(l)
	}
	mov1.DefaultLogSet(l)
	return l
}

func TestLogBootstrap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		replicas, sr  int32
		wantMembers   int
		otherNS       bool
		sameAsDefault bool
	}{
		{name: "three stores, three replicas", replicas: 3, wantMembers: 3, sameAsDefault: true},
		{name: "five stores, three replicas by default", replicas: 5, wantMembers: 3, sameAsDefault: true},
		{name: "one store", replicas: 1, wantMembers: 1},
		{name: "five stores, five replicas", replicas: 5, sr: 5, wantMembers: 5},
		{name: "another namespace", replicas: 3, wantMembers: 3, otherNS: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogSet(func(l *mov1.LogSet) {
				l.Spec.Replicas, l.Spec.ShardReplicas = tc.replicas, tc.sr
				if tc.otherNS {
					l.Namespace = "other"
				}
			})
			b := LogBootstrap(l)
			if again := LogBootstrap(l.DeepCopy()); !slices.Equal(again.InitialMembers, b.InitialMembers) || again.DeploymentID != b.DeploymentID {
				t.Fatalf("the bootstrap is not deterministic: %+v then %+v", b, again)
			}
			if len(b.InitialMembers) != tc.wantMembers {
				t.Fatalf("initial members %v, want %d", b.InitialMembers, tc.wantMembers)
			}
			for i, m := range b.InitialMembers {
				want := wire.StoreID(l.Namespace, LogPodName(l, i))
				if !strings.HasSuffix(m, ":"+want) || !strings.HasPrefix(m, "13107") {
					t.Errorf("member %d is %q, want <replica id>:%s", i, m, want)
				}
			}
			if b.DeploymentID <= 0 || b.DeploymentID > 1<<31 {
				t.Errorf("deployment id %d out of range", b.DeploymentID)
			}
			def := LogBootstrap(newLogSet())
			if tc.sameAsDefault != (def.DeploymentID == b.DeploymentID && slices.Equal(def.InitialMembers, b.InitialMembers)) {
				t.Errorf("bootstrap %+v vs the default set's %+v: same=%v, want %v", b, def, !tc.sameAsDefault, tc.sameAsDefault)
			}
		})
	}
}

func TestLogConfig(t *testing.T) {
	l := newLogSet(func(l *mov1.LogSet) {
		l.Spec.Config = "[log]\nlevel = \"info\"\n"
		l.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	})
	text, err := LogConfig(l, LogBootstrap(l))
	if err != nil {
		t.Fatal(err)
	}
	cfg := decode(t, text)
	for path, want := range map[string]any{
		"service-type":            "LOG",
		"logservice.service-host": "${POD_NAME}.mo-log-headless.db.svc",
		"logservice.uuid":         "${STORE_UUID}",
		"logservice.BootstrapConfig.num-of-log-shard-replicas": int64(3),
		"logservice.BootstrapConfig.num-of-log-shards":         int64(1),
		"log.level": "info",
	} {
		if got := at(t, cfg, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	seeds := at(t, cfg, "logservice.gossip-seed-addresses").([]any)
	if len(seeds) != 1 || seeds[0] != "mo-log-gossip.db.svc:32002" {
		t.Errorf("gossip seeds %v", seeds)
	}
	if got := at(t, cfg, "hakeeper-client.service-addresses").([]any); len(got) != 3 || got[0] != "mo-log-0.mo-log-headless.db.svc:32001" {
		t.Errorf("HAKeeper addresses %v", got)
	}
	if got := fileService(t, cfg, "SHARED")["data-dir"]; got != SharedMountPath+"/data" {
		t.Errorf("SHARED on a filesystem: data-dir %v", got)
	}
}

func TestLogStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   *mov1.LogSet
		check func(t *testing.T, pod corev1.PodSpec, mo corev1.Container)
	}{
		{"a shared filesystem is mounted", newLogSet(), func(t *testing.T, pod corev1.PodSpec, mo corev1.Container) {
			if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
				return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "mo-shared"
			}) || !slices.ContainsFunc(mo.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == SharedMountPath }) {
				t.Errorf("the shared claim is not mounted: %+v %+v", pod.Volumes, mo.VolumeMounts)
			}
			if env(mo, "GOMEMLIMIT") != "" {
				t.Error("GOMEMLIMIT without a memory limit")
			}
		}},
		{"S3 credentials come from the Secret, and nothing is mounted", newLogSet(func(l *mov1.LogSet) {
			l.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "http://s3", Bucket: "mo", Region: "r", CredentialsSecret: "s3-keys"}}
		}), func(t *testing.T, pod corev1.PodSpec, mo corev1.Container) {
			if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == SharedVolume }) {
				t.Error("a shared volume with S3")
			}
			for _, key := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
				i := slices.IndexFunc(mo.Env, func(e corev1.EnvVar) bool { return e.Name == key })
				if i < 0 || mo.Env[i].ValueFrom.SecretKeyRef.Name != "s3-keys" {
					t.Errorf("%s not from the Secret: %+v", key, mo.Env)
				}
			}
		}},
		{"an S3 CA Secret is mounted read-only, its default key as ca.crt", newLogSet(func(l *mov1.LogSet) {
			l.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3", Bucket: "mo-data", Region: "r",
				CASecret: &mov1.S3CASecret{Name: "s3-ca"}}}
		}), func(t *testing.T, pod corev1.PodSpec, mo corev1.Container) {
			checkS3CA(t, pod, mo, "s3-ca", mov1.DefaultCAKey)
		}},
		{"no S3 CA, no volume", newLogSet(func(l *mov1.LogSet) {
			l.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "http://s3", Bucket: "mo-data", Region: "r", PathStyle: true}}
		}), func(t *testing.T, pod corev1.PodSpec, _ corev1.Container) {
			if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == S3CAVolume }) {
				t.Error("an S3 CA volume without a CA Secret")
			}
		}},
		{"GOMEMLIMIT is four fifths of the memory limit", newLogSet(func(l *mov1.LogSet) {
			l.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("500Mi")}
		}), func(t *testing.T, _ corev1.PodSpec, mo corev1.Container) {
			if got := env(mo, "GOMEMLIMIT"); got != "400MiB" {
				t.Errorf("GOMEMLIMIT %q", got)
			}
		}},
		{"the probe asks every store", newLogSet(), func(t *testing.T, pod corev1.PodSpec, _ corev1.Container) {
			probe := pod.Containers[1]
			if probe.Name != ProbeContainerName || !strings.Contains(strings.Join(probe.Args, " "),
				"--hakeeper mo-log-0.mo-log-headless.db.svc:32001,mo-log-1.mo-log-headless.db.svc:32001,mo-log-2.mo-log-headless.db.svc:32001") {
				t.Errorf("probe %+v", probe)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := LogStatefulSet(tc.set, "mo-log-config-abc")
			if *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != "mo-log-headless" || sts.Spec.UpdateStrategy.Type != "OnDelete" ||
				sts.Spec.PodManagementPolicy != "Parallel" || sts.Spec.VolumeClaimTemplates[0].Name != DataVolume {
				t.Errorf("StatefulSet %+v", sts.Spec)
			}
			pod := sts.Spec.Template.Spec
			mo := pod.Containers[0]
			// mo-agent records the store's identity on its volume, and
			// reads a replaced store's from the stores ConfigMap.
			wantArgs := []string{"run", "--volume", DataDir, "--stores", StoresDir, "--hakeeper",
				"mo-log-0.mo-log-headless.db.svc:32001,mo-log-1.mo-log-headless.db.svc:32001,mo-log-2.mo-log-headless.db.svc:32001",
				ConfigDir + "/" + LogTemplateFile}
			if !slices.Equal(mo.Args, wantArgs) || mo.Image != mov1.DefaultImage {
				t.Errorf("container args %q, image %s", mo.Args, mo.Image)
			}
			stores := pod.Volumes[len(pod.Volumes)-1]
			if stores.ConfigMap == nil || stores.ConfigMap.Name != "mo-log-stores" || !*stores.ConfigMap.Optional ||
				!slices.Contains(mo.VolumeMounts, corev1.VolumeMount{Name: StoresVolume, MountPath: StoresDir, ReadOnly: true}) {
				t.Errorf("stores volume %+v, mounts %+v", stores, mo.VolumeMounts)
			}
			if *pod.SecurityContext.RunAsUser != 65532 || !*mo.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("security %+v %+v", pod.SecurityContext, mo.SecurityContext)
			}
			tc.check(t, pod, mo)
		})
	}
}

func TestLogHeadlessServicePublishesNotReadyAddresses(t *testing.T) {
	svc := LogHeadlessService(newLogSet())
	if !svc.Spec.PublishNotReadyAddresses || svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 4 {
		t.Errorf("Service %+v", svc.Spec)
	}
}

func TestLogGossipServiceIsAClusterIPOfTheGossipPort(t *testing.T) {
	l := newLogSet()
	svc := LogGossipService(l)
	if svc.Name != "mo-log-gossip" || svc.Spec.ClusterIP != "" || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
		!svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: %+v", svc.Name, svc.Spec)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != LogGossipPort || svc.Spec.Ports[0].TargetPort.StrVal != PortNameGossip {
		t.Errorf("ports %+v", svc.Spec.Ports)
	}
	if !maps.Equal(svc.Spec.Selector, LogHeadlessService(l).Spec.Selector) {
		t.Errorf("selector %v, want the stores' %v", svc.Spec.Selector, LogHeadlessService(l).Spec.Selector)
	}
}

// checkS3CA checks that the pod mounts key of Secret name read-only as
// S3CAFile, in mo-service's container.
func checkS3CA(t *testing.T, pod corev1.PodSpec, mo corev1.Container, name, key string) {
	t.Helper()
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == S3CAVolume })
	if i < 0 || pod.Volumes[i].Secret == nil {
		t.Fatalf("no S3 CA Secret volume: %+v", pod.Volumes)
	}
	src := pod.Volumes[i].Secret
	if src.SecretName != name || len(src.Items) != 1 || src.Items[0].Key != key || S3CADir+"/"+src.Items[0].Path != S3CAFile ||
		src.Optional != nil && *src.Optional {
		t.Errorf("the S3 CA volume: %+v, want %s's key %s as %s, not optional", src, name, key, S3CAFile)
	}
	j := slices.IndexFunc(mo.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == S3CAVolume })
	if j < 0 || mo.VolumeMounts[j].MountPath != S3CADir || !mo.VolumeMounts[j].ReadOnly {
		t.Errorf("the S3 CA mount: %+v", mo.VolumeMounts)
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestBucketClaimLabel checks that the pods of a set whose shared storage
// is a BucketClaim (resolved into s3 by the controller) carry the claim's
// name, which the claim's controller waits on before deleting its
// objects, and that the StatefulSet's selector does not.
func TestBucketClaimLabel(t *testing.T) {
	l := newLogSet(func(l *mov1.LogSet) {
		l.Spec.SharedStorage = mov1.SharedStorage{BucketClaim: "data",
			S3: &mov1.S3Storage{Endpoint: "http://s3", Bucket: "mo", Region: "r", CredentialsSecret: "s3-keys"}}
	})
	sts := LogStatefulSet(l, "mo-log-config-abc")
	if got := sts.Spec.Template.Labels[LabelBucketClaim]; got != "data" {
		t.Errorf("the pods' %s is %q", LabelBucketClaim, got)
	}
	if _, ok := sts.Spec.Selector.MatchLabels[LabelBucketClaim]; ok {
		t.Error("the selector has the claim's label")
	}
	tn := StoreSet{Namespace: "db", Name: "mo-tn", Role: RoleTN, Replicas: 1, Pods: &l.Spec.PodSetSpec, Log: l}
	if got := tn.StatefulSet("cfg").Spec.Template.Labels[LabelBucketClaim]; got != "data" {
		t.Errorf("the TN's pods' %s is %q", LabelBucketClaim, got)
	}
	if got := LogStatefulSet(newLogSet(), "cfg").Spec.Template.Labels; got[LabelBucketClaim] != "" {
		t.Errorf("a filesystem's pods carry %s: %v", LabelBucketClaim, got)
	}
}

// TestClusterPassesTheBucketClaim checks that a MatrixOneCluster's LogSet
// names the cluster's BucketClaim, which its sets resolve through it.
func TestClusterPassesTheBucketClaim(t *testing.T) {
	c := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mo"}, Spec: mov1.MatrixOneClusterSpec{
		SharedStorage: mov1.SharedStorage{BucketClaim: "data"}, CNGroups: []mov1.CNGroupSpec{{Name: "cn"}}}}
	sets := Sets(c)
	if got := sets.Log.Spec.SharedStorage; got.BucketClaim != "data" || got.S3 != nil || got.FileSystem != nil {
		t.Errorf("the LogSet's shared storage is %+v", got)
	}
	if sets.TN.Spec.LogSet != sets.Log.Name || sets.CNs[0].Spec.LogSet != sets.Log.Name {
		t.Errorf("the sets do not name the LogSet %s", sets.Log.Name)
	}
}

func TestSharedBucketClaim(t *testing.T) {
	template := &mov1.BucketClaimSpec{S3: mov1.S3Storage{Endpoint: "http://s3:7070", Bucket: "mo", KeyPrefix: "db/mo", Region: "us-east-1"},
		ReclaimPolicy: commonv1.ReclaimDelete}
	for _, tc := range []struct {
		name    string
		storage mov1.SharedStorage
		want    bool
	}{
		{"a filesystem claim", mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: "mo-shared"}}, false},
		{"the user's claim", mov1.SharedStorage{BucketClaim: "data"}, false},
		{"a claim from the template", mov1.SharedStorage{BucketClaim: "data", BucketClaimTemplate: template}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogSet(func(l *mov1.LogSet) { l.Spec.SharedStorage = tc.storage })
			b := SharedBucketClaim(l)
			if (b != nil) != tc.want {
				t.Fatalf("claim %+v, want one: %v", b, tc.want)
			}
			if b == nil {
				return
			}
			if b.Namespace != "db" || b.Name != "data" || len(b.OwnerReferences) != 0 {
				t.Errorf("claim %s/%s owned by %v, want db/data and no owner", b.Namespace, b.Name, b.OwnerReferences)
			}
			if !maps.Equal(b.Labels, Labels("mo-log", ComponentShared)) {
				t.Errorf("labels %v", b.Labels)
			}
			if b.Spec.S3 != template.S3 || b.Spec.ReclaimPolicy != commonv1.ReclaimDelete {
				t.Errorf("spec %+v, want the template's", b.Spec)
			}
			b.Spec.S3.Bucket = "changed"
			if l.Spec.SharedStorage.BucketClaimTemplate.S3.Bucket != "mo" {
				t.Error("the claim shares the template's memory")
			}
		})
	}
}

func TestLogPodsKnowTheirUID(t *testing.T) {
	uid := func(c corev1.Container) string {
		for _, e := range c.Env {
			if e.Name == wire.PodUIDEnv && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				return e.ValueFrom.FieldRef.FieldPath
			}
		}
		return ""
	}
	l := newLogSet()
	if got := uid(LogStatefulSet(l, "cfg").Spec.Template.Spec.Containers[0]); got != "metadata.uid" {
		t.Errorf("the log store's %s comes from %q, want metadata.uid", wire.PodUIDEnv, got)
	}
	tn := StoreSet{Namespace: "db", Name: "mo-tn", Role: RoleTN, Replicas: 1, Pods: &l.Spec.PodSetSpec, Log: l}
	if got := uid(tn.StatefulSet("cfg").Spec.Template.Spec.Containers[0]); got != "" {
		t.Errorf("a TN has %s from %q: only log stores are replaced by UID", wire.PodUIDEnv, got)
	}
}
