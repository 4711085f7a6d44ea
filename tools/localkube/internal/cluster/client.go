package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// client is the launcher's view of the API server.
type client struct{ kubernetes.Interface }

func newClient(kubeconfig string) (*client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &client{cs}, nil
}

func (k *client) readyz(ctx context.Context) error {
	body, err := k.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("readyz: %w: %s", err, body)
	}
	return nil
}

// bootstrap creates what the cluster's add-ons need from the API: the DNS
// Service pointing at CoreDNS on the node address, and the default
// StorageClass.
func (k *client) bootstrap(ctx context.Context) error {
	dnsLabels := map[string]string{"k8s-app": "kube-dns", "app.kubernetes.io/managed-by": "localkube"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: dnsLabels},
		Spec: corev1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if err := ignoreExists(k.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("create DNS Service: %w", err)
	}
	// CoreDNS is a process on the node, not a pod, so the Service has no
	// selector and its endpoints are declared here.
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-localkube", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "localkube",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{NodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](53)},
			{Name: ptr.To("dns-tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](53)},
		},
	}
	if err := ignoreExists(k.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("create DNS EndpointSlice: %w", err)
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{
			"storageclass.kubernetes.io/is-default-class": "true",
		}},
		Provisioner:   ProvisionerName,
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete),
		// The provisioner expands its volumes (provisioner.Resize).
		AllowVolumeExpansion: ptr.To(true),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
	}
	if err := ignoreExists(k.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("create StorageClass: %w", err)
	}
	return k.letNodesReadVolumes(ctx)
}

// NodeVolumeReaderRole names the ClusterRole (and its binding to the
// system:nodes group) that lets kubelets read volume claims and volumes
// whatever the Node authorizer's graph says.
const NodeVolumeReaderRole = "localkube:node-volume-reader"

// letNodesReadVolumes grants the kubelet, through RBAC, the reads of claims
// and volumes the Node authorizer grants it once its graph links a pod on
// the node to them. The graph is fed by the API server's own watch, which
// can lag the kubelet's: a pod re-created under a StatefulSet was seen
// failing its mount with "no relationship found between node and this
// object" (kubernetes/kubernetes#113429) and starting 9-10 s late, when the
// kubelet tried again. Real clusters have the same race, more rarely; here
// every test of healing would measure it. Nothing else is widened: Secrets
// and ConfigMaps stay behind the graph.
func (k *client) letNodesReadVolumes(ctx context.Context) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": "localkube"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: NodeVolumeReaderRole, Labels: labels},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get"},
		}},
	}
	if err := ignoreExists(k.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NodeVolumeReaderRole, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
	if err := ignoreExists(k.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

func (k *client) nodeReady(ctx context.Context, name string) error {
	node, err := k.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !isReady(node) {
		return fmt.Errorf("node %s is not Ready", name)
	}
	return nil
}

func isReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// simulatedNodeName names the i-th kwok node.
func simulatedNodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// createSimulatedNodes creates n Node objects for kwok to keep alive, each
// taking podCapacity pods.
func (k *client) createSimulatedNodes(ctx context.Context, n, podCapacity int) error {
	for i := range n {
		node := simulatedNode(i, podCapacity)
		if err := ignoreExists(k.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})); err != nil {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	return nil
}

// simulatedNode is the i-th kwok node. It is tainted so that only pods that
// ask for simulated nodes land there; their containers never run. The API
// server keeps a Node's status from its creation and kwok keeps a capacity
// it finds, so the capacity set here is the one the scheduler sees.
func simulatedNode(i, podCapacity int) *corev1.Node {
	name := simulatedNodeName(i)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"type": "kwok",
			},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				// CPU and memory grow with the pods, so that the pod count
				// is what limits: a core and 2 GiB a pod, at least 32 and
				// 256 GiB (a node of 2,000 pods ran out of 256 GiB at 819
				// ZooKeeper pods).
				corev1.ResourceCPU:    *resource.NewQuantity(int64(max(32, podCapacity)), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(max(256, 2*podCapacity))<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(podCapacity), resource.DecimalSI),
			},
		},
	}
	node.Status.Allocatable = node.Status.Capacity
	return node
}

func (k *client) simulatedNodesReady(ctx context.Context, n int) error {
	for i := range n {
		if err := k.nodeReady(ctx, simulatedNodeName(i)); err != nil {
			return err
		}
	}
	return nil
}

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
