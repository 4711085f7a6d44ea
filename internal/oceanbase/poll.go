package oceanbase

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/internal/framework"
)

// transitionPoll is how soon a bootstrapped cluster that is not Ready is
// observed again. OceanBase changes on its own (a server added starts
// serving, a restarted one comes back from INACTIVE, a zone is started),
// and no watch sees it: without this, Ready would wait for the resync.
const transitionPoll = 2 * time.Second

// poller enqueues clusters again after transitionPoll, one timer per
// cluster at a time.
type poller struct {
	trigger *framework.Trigger
	pending sync.Map // types.UID -> struct{}
}

func newPoller() *poller { return &poller{trigger: framework.NewTrigger()} }

// pollIfNotReady observes ob again soon when it is bootstrapped and not
// Ready; flows poll on their own, this covers the passes between them.
func (p *poller) pollIfNotReady(ob *Cluster) {
	ready := meta.FindStatusCondition(ob.Status.Conditions, framework.ConditionReady)
	if ob.Status.BootstrappedAt == nil || ready != nil && ready.Status == metav1.ConditionTrue {
		return
	}
	uid, group := ob.UID, framework.Group(ob)
	if _, scheduled := p.pending.LoadOrStore(uid, struct{}{}); scheduled {
		return
	}
	time.AfterFunc(transitionPoll, func() {
		p.pending.Delete(uid)
		p.trigger.Enqueue(group)
	})
}
