package standard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
)

// configHashLen is the length of the content hash in config ConfigMap names.
const configHashLen = 10

// ConfigHash returns the content hash of data used in config ConfigMap
// names: the first 10 hex digits of a SHA-256 over the sorted keys and
// values.
func ConfigHash(data map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		// Length prefixes keep {"a":"bc"} and {"ab":"c"} apart.
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(k), k, len(data[k]), data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:configHashLen]
}

// ConfigMapName returns the name of the config ConfigMap of owner's
// component holding data: "<owner>-<component>-<hash>".
func ConfigMapName(owner, component string, data map[string]string) string {
	return fmt.Sprintf("%s-%s-%s", owner, component, ConfigHash(data))
}
