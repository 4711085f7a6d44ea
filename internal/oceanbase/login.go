package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// logins connects to observers, and keeps one operator login per cluster
// across passes: a login is a TCP connection and a handshake, and a pass
// runs every few seconds during a flow.
//
// A login is shared: the cluster's pass, its OBParameters' passes and a
// tenant's background CREATE TENANT use it at the same time, on other
// goroutines. One that finds it broken (its observer went with the
// RootService, say) replaces it for the users that come next, but it is
// closed only once no one uses it any more: closing it at once failed the
// others' statements in flight with "sql: database is closed", and every
// view of the cluster said ClusterUnreachable for a pass. A user is a
// holder (an object's passes: it keeps the login it got until its next
// pass asks again, or release) or a hold (background work, until its
// release function runs).
type logins struct {
	resolve func(ip string) string
	timeout time.Duration

	mu sync.Mutex
	// current is the login each cluster's new users get.
	current map[types.UID]*login
	// holders are the login each holder got last, by holder.
	holders map[string]*login
	// byDB finds a login that is not closed yet from its *sql.DB.
	byDB map[*sql.DB]*login
}

// login is one operator login and who uses it.
type login struct {
	db       *sql.DB
	password string
	users    int  // holders and holds using it
	retired  bool // replaced: no new user gets it; closed once users is 0
}

func newLogins(opts Options) *logins {
	return &logins{resolve: opts.Resolve, timeout: opts.StatementTimeout, current: map[types.UID]*login{},
		holders: map[string]*login{}, byDB: map[*sql.DB]*login{}}
}

// holderOf names the holder of kind's object uid: its passes.
func holderOf(kind string, uid types.UID) string { return kind + "/" + string(uid) }

// connect logs in to the first of hosts (observer IPs) that answers.
func (l *logins) connect(ctx context.Context, hosts []string, login obsql.Login) (*sql.DB, error) {
	var last error
	for _, h := range hosts {
		db, err := obsql.Open(ctx, l.resolve(h), login, l.timeout)
		if err == nil {
			return db, nil
		}
		last = err
	}
	if last == nil {
		return nil, fmt.Errorf("no observer to connect to")
	}
	return nil, fmt.Errorf("no observer answered: %w", last)
}

// operator returns the operator's login to cluster uid for holder: the
// current one while it answers (and the password is the same), else a new
// one to the first of hosts that answers. The holder keeps it until it
// asks again or releases it: the login it held before is let go now (its
// last pass is over).
func (l *logins) operator(ctx context.Context, holder string, uid types.UID, hosts []string, password string) (*sql.DB, error) {
	l.mu.Lock()
	l.releaseLocked(holder)
	cur := l.current[uid]
	if cur != nil && cur.password == password {
		l.useLocked(holder, cur)
		l.mu.Unlock()
		if err := cur.db.PingContext(ctx); err == nil {
			return cur.db, nil
		}
		l.mu.Lock()
		l.retireLocked(uid, cur)
		l.releaseLocked(holder)
		l.mu.Unlock()
	} else {
		l.mu.Unlock()
	}
	db, err := l.connect(ctx, hosts, obsql.Login{User: operatorUser, Password: password})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.current[uid]; cur != nil && cur.password == password {
		// Another user logged in meanwhile: share theirs; no one has ours.
		db.Close()
		l.useLocked(holder, cur)
		return cur.db, nil
	} else if cur != nil {
		l.retireLocked(uid, cur) // another password: the Secret changed
	}
	n := &login{db: db, password: password}
	l.current[uid], l.byDB[db] = n, n
	l.useLocked(holder, n)
	return db, nil
}

// hold keeps db open for background work until the returned function is
// called, whatever replaces it meanwhile. db must be a login holder got
// and still holds.
func (l *logins) hold(db *sql.DB) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.byDB[db]
	if n == nil {
		return func() {}
	}
	n.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			n.users--
			l.closeIfUnusedLocked(n)
		})
	}
}

// release lets go of what holder holds (its object is finalized).
func (l *logins) release(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(holder)
}

// drop stops handing out db, a login to cluster uid that failed: the next
// user logs in again. It is closed once no one uses it.
func (l *logins) drop(uid types.UID, db *sql.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.byDB[db]; n != nil {
		l.retireLocked(uid, n)
	}
}

// forget stops handing out cluster uid's login (the cluster is deleted);
// it is closed once no one uses it.
func (l *logins) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.current[uid]; n != nil {
		l.retireLocked(uid, n)
	}
}

func (l *logins) useLocked(holder string, n *login) {
	n.users++
	l.holders[holder] = n
}

func (l *logins) releaseLocked(holder string) {
	n := l.holders[holder]
	if n == nil {
		return
	}
	delete(l.holders, holder)
	n.users--
	l.closeIfUnusedLocked(n)
}

func (l *logins) retireLocked(uid types.UID, n *login) {
	if l.current[uid] == n {
		delete(l.current, uid)
	}
	n.retired = true
	l.closeIfUnusedLocked(n)
}

func (l *logins) closeIfUnusedLocked(n *login) {
	if n.retired && n.users <= 0 && l.byDB[n.db] == n {
		delete(l.byDB, n.db)
		n.db.Close()
	}
}

// operatorDB logs in to ob as its operator user through the logins l, for
// holder, through its observers' addresses (ready ones first).
func operatorDB(ctx context.Context, r client.Reader, l *logins, holder string, ob *Cluster) (*sql.DB, error) {
	ob = ob.DeepCopy()
	obv1.Default(ob) // the credentials' names, when no webhook wrote them
	pw, err := framework.ReadPassword(ctx, r, ob.Namespace, ob.Spec.Credentials.Operator)
	if err != nil {
		return nil, err
	}
	return l.operator(ctx, holder, ob.UID, clusterHosts(ob), pw)
}

// clusterHosts are the IPs of ob's observers as its status lists them,
// those whose pods are ready first, a leaving zone's last.
func clusterHosts(ob *Cluster) []string {
	var ready, other []string
	for _, s := range ob.Status.Servers {
		ip, _, err := net.SplitHostPort(s.Address)
		switch {
		case err != nil:
		case s.PodReady && slices.ContainsFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == s.Zone }):
			ready = append(ready, ip)
		default:
			other = append(other, ip)
		}
	}
	return append(ready, other...)
}

// bootstrappedCluster is the dependency of a tenant or a parameter on its
// cluster: the cluster named, bootstrapped.
func bootstrappedCluster(name string) []framework.Dependency {
	return []framework.Dependency{{
		Object: &Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
		Ready: func(o client.Object) (bool, string) {
			c := meta.FindStatusCondition(o.(*Cluster).Status.Conditions, obv1.ConditionBootstrapped)
			if c == nil || c.Status != metav1.ConditionTrue {
				return false, "not bootstrapped"
			}
			return true, ""
		},
	}}
}
