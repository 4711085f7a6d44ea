package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// logins connects to observers, and keeps one operator login per cluster
// across passes: a login is a TCP connection and a handshake, and a pass
// runs every few seconds during a flow.
type logins struct {
	resolve func(ip string) string
	timeout time.Duration

	mu  sync.Mutex
	dbs map[types.UID]*cachedDB
}

type cachedDB struct {
	db       *sql.DB
	password string
}

func newLogins(opts Options) *logins {
	return &logins{resolve: opts.Resolve, timeout: opts.StatementTimeout, dbs: map[types.UID]*cachedDB{}}
}

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

// operator returns the operator's login to cluster uid: the cached one
// while it answers (and the password is the same), else a new one to the
// first of hosts that answers.
func (l *logins) operator(ctx context.Context, uid types.UID, hosts []string, password string) (*sql.DB, error) {
	l.mu.Lock()
	cached := l.dbs[uid]
	l.mu.Unlock()
	if cached != nil && cached.password == password {
		if err := cached.db.PingContext(ctx); err == nil {
			return cached.db, nil
		}
		l.drop(uid)
	}
	db, err := l.connect(ctx, hosts, obsql.Login{User: operatorUser, Password: password})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.dbs[uid]; old != nil { // another worker logged in meanwhile
		old.db.Close()
	}
	l.dbs[uid] = &cachedDB{db: db, password: password}
	return db, nil
}

// drop closes and forgets the login to cluster uid.
func (l *logins) drop(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cached := l.dbs[uid]; cached != nil {
		cached.db.Close()
		delete(l.dbs, uid)
	}
}
