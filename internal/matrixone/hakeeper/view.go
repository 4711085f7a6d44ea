package hakeeper

import (
	"slices"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// View is HAKeeper's view of a cluster at one tick, as mo-agent serves it;
// wire documents its fields and the questions it answers (Running,
// LeaderlessShards, MajorityKeptWithout).
type View = wire.View

// Freshest returns the view with the highest tick, and false when there is
// none. The operator asks every log pod's agent; they may answer from
// different moments (or one from a HAKeeper replica that lost its
// leadership), and the newest one wins.
func Freshest(views []View) (View, bool) {
	if len(views) == 0 {
		return View{}, false
	}
	return slices.MaxFunc(views, func(a, b View) int {
		switch {
		case a.Tick < b.Tick:
			return -1
		case a.Tick > b.Tick:
			return 1
		}
		return 0
	}), true
}
