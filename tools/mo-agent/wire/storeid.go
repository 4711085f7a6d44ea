package wire

import (
	"crypto/sha1" //nolint:gosec // RFC 4122 name-based UUIDs (version 5) are defined over SHA-1.
	"fmt"
)

// namespaceUUID is the RFC 4122 namespace of Steward's MatrixOne store IDs
// (7cb8808d-b4c1-4caf-9f4e-641f167ee9c5).
var namespaceUUID = [16]byte{0x7c, 0xb8, 0x80, 0x8d, 0xb4, 0xc1, 0x4c, 0xaf, 0x9f, 0x4e, 0x64, 0x1f, 0x16, 0x7e, 0xe9, 0xc5}

// StoreID is the UUID the MatrixOne store of pod runs as: an RFC 4122
// version 5 UUID of "<namespace>/<pod>". mo-agent computes it in the pod
// (${STORE_UUID} in a configuration template); the operator computes it to
// name a log set's first stores as HAKeeper's initial members before they
// exist, and to match stores in the view to pods.
func StoreID(namespace, pod string) string {
	h := sha1.New() //nolint:gosec // see the import
	h.Write(namespaceUUID[:])
	h.Write([]byte(namespace + "/" + pod))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
