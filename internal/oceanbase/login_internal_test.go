package oceanbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stewardhq/steward/internal/oceanbase/obsim"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// loginNode runs a bootstrapped one-server obsim cluster on ip with an
// operator user whose password is "pw", for the logins' tests.
func loginNode(t *testing.T, ip string) {
	t.Helper()
	if l, err := net.Listen("tcp", ip+":0"); err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	} else {
		l.Close()
	}
	d := func(v time.Duration) obsim.Duration { return obsim.Duration{Duration: v} }
	addr := net.JoinHostPort(ip, "2882")
	n, err := obsim.New(obsim.Config{Addr: addr, SQLListen: ip + ":2881", RPCListen: addr, ClusterName: "logins",
		ClusterID: 1, Zone: "z1", DataDir: t.TempDir(), Knobs: obsim.Knobs{BootstrapDelay: d(10 * time.Millisecond),
			StartServiceDelay: d(10 * time.Millisecond), Lease: d(2 * time.Second), Heartbeat: d(100 * time.Millisecond)}})
	if err == nil {
		err = n.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	root, err := obsql.Open(t.Context(), ip, obsql.Login{User: rootUser}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := obsql.Bootstrap(t.Context(), root, []obsql.BootstrapMember{{Zone: "z1", Addr: addr}}); err != nil {
		t.Fatal(err)
	}
	if err := obsql.EnsureUser(t.Context(), root, operatorUser, "pw", "ALL PRIVILEGES"); err != nil {
		t.Fatal(err)
	}
}

// TestLoginReplacedWhileInUse: a login one user drops (its pass failed,
// as when the RootService moves) or replaces stays open for the others
// that got it, until each let it go; only then is it closed.
func TestLoginReplacedWhileInUse(t *testing.T) {
	const ip = "127.0.80.1"
	loginNode(t, ip)
	l := newLogins(Options{}.withDefaults())
	uid := types.UID("cluster")
	ctx := t.Context()

	cluster, err := l.operator(ctx, "OBCluster/1", uid, []string{ip}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	param, err := l.operator(ctx, "OBParameter/1", uid, []string{ip}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if param != cluster {
		t.Fatal("two users of one cluster got two logins")
	}
	// The cluster's pass finds the login failing and drops it, while the
	// parameter's pass is still at work on it.
	l.drop(uid, cluster)
	if _, err := obsql.Servers(ctx, param); err != nil {
		t.Fatalf("a user's login was closed under it: %v", err)
	}
	// The next pass of the cluster logs in again; the parameter's pass,
	// still running, keeps its login.
	next, err := l.operator(ctx, "OBCluster/1", uid, []string{ip}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if next == param {
		t.Fatal("the dropped login was handed out again")
	}
	if _, err := obsql.Servers(ctx, param); err != nil {
		t.Fatalf("a user's login was closed under it: %v", err)
	}
	// Background work holds it beyond its holder's next pass.
	release := l.hold(next)
	l.drop(uid, next)
	if _, err := l.operator(ctx, "OBCluster/1", uid, []string{ip}, "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := obsql.Servers(ctx, next); err != nil {
		t.Fatalf("a held login was closed under its statement: %v", err)
	}
	release()
	if err := next.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a dropped login no one holds is still open: %v", err)
	}
	// The parameter's next pass lets the first one go: closed.
	if _, err := l.operator(ctx, "OBParameter/1", uid, []string{ip}, "pw"); err != nil {
		t.Fatal(err)
	}
	if err := param.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a dropped login no one holds is still open: %v", err)
	}
}

// TestLoginSharedRace runs the users of one cluster's login at once, as
// the cluster's, its parameters' and its tenants' workers do, each
// dropping the login now and then as a failing pass does: no statement
// finds its login closed. Run it with -race.
func TestLoginSharedRace(t *testing.T) {
	const ip = "127.0.80.2"
	loginNode(t, ip)
	l := newLogins(Options{}.withDefaults())
	uid := types.UID("cluster")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("user/%d", w)
			defer l.release(holder)
			var logins int
			var lastErr error
			defer func() {
				// A dial that times out on a busy machine is retried: what
				// is checked is that a login is never closed under a user.
				if logins == 0 {
					errs <- fmt.Errorf("%s never logged in: %w", holder, lastErr)
				}
			}()
			for i := 0; ctx.Err() == nil; i++ {
				db, err := l.operator(ctx, holder, uid, []string{ip}, "pw")
				if err != nil {
					lastErr = err
					continue
				}
				logins++
				if (i+w)%3 == 0 {
					l.drop(uid, db) // this pass found it failing
				}
				for range 2 {
					_, err = obsql.Servers(ctx, db)
					if errors.Is(err, sql.ErrConnDone) || err != nil && strings.Contains(err.Error(), "database is closed") {
						errs <- fmt.Errorf("%s, pass %d: %w", holder, i, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.holders) != 0 || len(l.byDB) > 1 {
		t.Errorf("after every user let go: %d held, %d open logins; want 0 and at most the current one", len(l.holders), len(l.byDB))
	}
}
