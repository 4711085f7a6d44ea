package matrixone

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// MatrixOne's version rules, as MatrixOne 1.2.4 enforces them when a CN
// starts (pkg/bootstrap/service_upgrade.go, doCheckUpgrade):
//
//   - A CN compares the version its binary upgrades to with the cluster's
//     catalog version (mo_catalog.mo_version). A newer CN upgrades the
//     catalog, through every version between the two; a CN older than the
//     catalog panics: "cannot startup a old version ... to join cluster".
//     So once a CN has started on a version, no CN of an older one starts
//     again. 1.2.3 and 1.2.4 happen to share their catalog version (1.2.4
//     adds no upgrade step), but 1.2.2 raised 1.2.1's: a version alone does
//     not say whether a catalog moves, so Steward treats every downgrade as
//     one that did.
//   - The upgrade steps of a release line begin at the line before it
//     (1.2.0's MinUpgradeVersion is 1.1.0): an upgrade crosses at most one
//     release line.
//
// Steward checks these at admission on images whose tags name versions
// (standard.ImageVersion) and warns that it cannot on others.
//
// Only CNs write the catalog, and the rollout gives CNs a change after the
// log service and before the TN and the proxy (docs/matrixone.md). So a
// MatrixOneCluster may roll an upgrade back while no CN group has been
// given the newer version, which leaves only the log stores to go back; a
// standalone TNSet, CNSet or ProxySet never goes back, and a LogSet only
// under a MatrixOneCluster, whose own admission decided.

// upgradePath refuses a change of image from one version to another that
// MatrixOne cannot upgrade between in one step. Downgrades are the
// callers' to judge. A version alone does not say which line is a major
// version's last, so the first line of the next major (x.0) is admitted
// from any line of the one before: a CN refuses at its start what
// MatrixOne cannot upgrade from.
func upgradePath(path *field.Path, image string, from, to *version.Version) *field.Error {
	switch {
	case from == nil || to == nil || !from.LessThan(to):
		return nil
	case to.Major() == from.Major() && to.Minor() <= from.Minor()+1,
		to.Major() == from.Major()+1 && to.Minor() == 0:
		return nil
	}
	return field.Invalid(path, image, fmt.Sprintf(
		"MatrixOne upgrades across one release line at a time (its upgrade steps begin at the line before): "+
			"from %d.%d upgrade to %d.%d first, or to %d.0 if %d.%d is the last %d.x line",
		from.Major(), from.Minor(), from.Major(), from.Minor()+1, from.Major()+1, from.Major(), from.Minor(), from.Major()))
}

// downgradeRefused is why a set's image may not go from one version to
// an older one.
func downgradeRefused(path *field.Path, image string, from *version.Version, why string) *field.Error {
	return field.Invalid(path, image, fmt.Sprintf("must not be older than %s: %s", from, why))
}

const catalogRule = "MatrixOne's CNs upgrade the cluster's catalog when they start on a newer version, " +
	"and a CN older than the catalog refuses to start"

// validateImageChange checks a set's change of image: the upgrade path
// for every kind, and no downgrade but a LogSet's under a
// MatrixOneCluster (see above).
func validateImageChange(kind string, old metav1.Object, oldImage, image string) error {
	from, to, err := imageChange(oldImage, image)
	if err != nil || from == nil || to == nil || !to.LessThan(from) {
		return err
	}
	if kind == "LogSet" && ownedByCluster(old) {
		return nil
	}
	why := "a " + kind + " never rolls back: " + catalogRule + " (a MatrixOneCluster rolls an upgrade back while no CN has been given it)"
	return field.ErrorList{downgradeRefused(imagePath, image, from, why)}.ToAggregate()
}

// imagePath is the field the version rules are about.
var imagePath = field.NewPath("spec", "image")

// imageChange reads the versions of a change of image, and refuses one
// across more than one release line (upgradePath).
func imageChange(oldImage, image string) (from, to *version.Version, _ error) {
	from, to = standard.ImageVersion(oldImage), standard.ImageVersion(image)
	if err := upgradePath(imagePath, image, from, to); err != nil {
		return nil, nil, field.ErrorList{err}.ToAggregate()
	}
	return from, to, nil
}

// ownedByCluster reports whether a MatrixOneCluster controls obj.
func ownedByCluster(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == "MatrixOneCluster" && ref.APIVersion == mov1.GroupVersion.String()
}

// ValidateUpdate refuses a change of spec.image that MatrixOne could not
// follow (framework.UpdateValidator): an upgrade across more than one
// release line, and a downgrade once a CN group has been given a version
// newer than the one asked for. Before that, a downgrade is a rollback:
// the log stores go back the way they came.
func (*ClusterController) ValidateUpdate(old, c *Cluster) error {
	_, to, err := imageChange(old.Spec.Image, c.Spec.Image)
	if err != nil {
		return err
	}
	// Against what the CN groups were given, whatever spec.image said
	// before (it may have named no version).
	if set, v := newestCNImage(old); to != nil && v != nil && to.LessThan(v) {
		why := fmt.Sprintf("CNSet %s was given MatrixOne %s; %s, so an upgrade rolls back only while no CN group has been given it", set, v, catalogRule)
		return field.ErrorList{downgradeRefused(imagePath, c.Spec.Image, v, why)}.ToAggregate()
	}
	return nil
}

// newestCNImage is the CN group of c's status whose image names the newest
// version, and that version; nil when none names one.
func newestCNImage(c *Cluster) (string, *version.Version) {
	var name string
	var newest *version.Version
	for _, s := range c.Status.Sets {
		if s.Kind != "CNSet" {
			continue
		}
		if v := standard.ImageVersion(s.Image); v != nil && (newest == nil || newest.LessThan(v)) {
			name, newest = s.Name, v
		}
	}
	return name, newest
}

// Warnings says when spec.image's tag names no version: the version rules
// above cannot be checked (framework.Warner).
func (*ClusterController) Warnings(c *Cluster) []string { return imageWarnings(c.Spec.Image) }

// Warnings says when spec.image's tag names no version (see
// ClusterController.Warnings).
func (*LogSetController) Warnings(l *LogSet) []string { return imageWarnings(l.Spec.Image) }

// Warnings says when spec.image's tag names no version (see
// ClusterController.Warnings).
func (c *StoreSetController[T]) Warnings(obj T) []string {
	return imageWarnings(any(obj).(mov1.PodSetter).PodSet().Image)
}

func imageWarnings(image string) []string {
	if image == "" || standard.ImageVersion(image) != nil {
		return nil
	}
	return []string{fmt.Sprintf("spec.image: the tag of %q names no version, so MatrixOne's upgrade rules "+
		"(no downgrade once a CN ran a version, one release line at a time) are not checked", image)}
}

// ValidateUpdate refuses a change of spec.image MatrixOne could not
// follow (validateImageChange).
func (*LogSetController) ValidateUpdate(old, l *LogSet) error {
	return validateImageChange("LogSet", old, old.Spec.Image, l.Spec.Image)
}

// ValidateUpdate refuses a change of spec.image MatrixOne could not
// follow (validateImageChange).
func (c *StoreSetController[T]) ValidateUpdate(old, obj T) error {
	return validateImageChange(c.k.kind, old, any(old).(mov1.PodSetter).PodSet().Image, any(obj).(mov1.PodSetter).PodSet().Image)
}

// cnDowngrade is why the cluster keeps a CN group's image instead of
// giving it an older one: the admission of the cluster refuses that, but
// a rollback admitted in the moment before a pass gave a group the newer
// version, and recorded it in status.sets, is refused here. "" when the
// change is no such downgrade.
func cnDowngrade(live, desired framework.Object) string {
	l, ok := live.(*mov1.CNSet)
	if !ok {
		return ""
	}
	from, to := standard.ImageVersion(l.Spec.Image), standard.ImageVersion(desired.(*mov1.CNSet).Spec.Image)
	if from == nil || to == nil || !to.LessThan(from) {
		return ""
	}
	return fmt.Sprintf("keeps %s, not %s: %s", l.Spec.Image, desired.(*mov1.CNSet).Spec.Image, catalogRule)
}
