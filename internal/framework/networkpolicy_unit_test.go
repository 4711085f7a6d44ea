package framework_test

import (
	"fmt"
	"testing"

	"github.com/stewardhq/steward/internal/framework"
)

func TestOperatorPeer(t *testing.T) {
	for _, tc := range []struct {
		namespace string
		want      map[string]string
	}{
		{"steward-system", map[string]string{"kubernetes.io/metadata.name": "steward-system"}},
		{"", nil}, // any namespace
	} {
		peer := framework.OperatorPeer(tc.namespace)
		if peer.NamespaceSelector == nil || fmt.Sprint(peer.NamespaceSelector.MatchLabels) != fmt.Sprint(tc.want) {
			t.Errorf("OperatorPeer(%q) namespaces %+v, want %v", tc.namespace, peer.NamespaceSelector, tc.want)
		}
		if peer.PodSelector == nil || peer.PodSelector.MatchLabels["app.kubernetes.io/name"] != "steward" {
			t.Errorf("OperatorPeer(%q) pods %+v, want Steward's", tc.namespace, peer.PodSelector)
		}
	}
}
