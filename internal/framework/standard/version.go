package standard

import (
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/version"
)

// ImageVersion returns the version an image reference's tag names, with or
// without a leading "v" ("1.2.4", "v1.2.4", "1.2.4-rc1"), or nil when it
// names none: no tag, a digest alone, or a tag such as "latest" or
// "nightly". A system's upgrade rules can only be checked between two
// images that both name a version.
func ImageVersion(image string) *version.Version {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		return nil
	}
	v, err := version.ParseSemantic(strings.TrimPrefix(tagged.Tag(), "v"))
	if err != nil {
		return nil
	}
	return v
}
