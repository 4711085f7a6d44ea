package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/stewardhq/steward/test/zkcheck"
)

// zkWrite writes znodes <root>/<n>, n = 1, 2, ..., through server for as
// long as it runs (or until count writes), and prints "ACK n" once
// ZooKeeper acknowledged n. A write whose answer was lost (the connection
// broke) is retried under the same n: ZNodeExists then means the first try
// committed, which is acknowledged too. The end-to-end suite asserts that
// every acknowledged znode is there at the end, whatever happened to the
// ensemble meanwhile.
func zkWrite(server, root string, interval time.Duration, count int) {
	conn := connect(server)
	defer conn.Close()
	ensure(conn, root)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	for n := 1; count == 0 || n <= count; {
		select {
		case <-stop:
			fmt.Println("STOP")
			return
		case <-time.After(interval):
		}
		path := fmt.Sprintf("%s/%d", root, n)
		_, err := conn.Create(path, []byte(strconv.Itoa(n)), 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			fmt.Printf("ERR %d %v\n", n, err)
			continue
		}
		fmt.Printf("ACK %d\n", n)
		n++
	}
	fmt.Println("DONE")
	for range stop {
		return
	}
}

// zkCheck prints the children of root in increasing order, one per line,
// after a sync so that the answer is as recent as the leader's, then
// "END <count>" (test/zkcheck): a reader of the output (a pod's log, which
// can lose the end of what a short-lived container wrote) knows it has all
// of it.
func zkCheck(ctx context.Context, server, root string) {
	conn := connect(server)
	defer conn.Close()
	var children []string
	var err error
	for ctx.Err() == nil {
		if _, err = conn.Sync(root); err == nil {
			if children, _, err = conn.Children(root); err == nil {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		fail("children of %s: %v", root, err)
	}
	slices.SortFunc(children, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	fmt.Print(zkcheck.Format(children))
}

func connect(server string) *zk.Conn {
	conn, _, err := zk.Connect(strings.Split(server, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithHostProvider(&nameProvider{}))
	if err != nil {
		fail("connect %s: %v", server, err)
	}
	return conn
}

// nameProvider hands go-zookeeper the servers' names as given, where its
// DNSHostProvider resolves them once: every reconnect resolves a name
// again, so that a client of a Service re-created with its cluster (a new
// ClusterIP) finds it.
type nameProvider struct {
	servers []string
	next    int
}

func (p *nameProvider) Init(servers []string) error { p.servers = servers; return nil }
func (p *nameProvider) Len() int                    { return len(p.servers) }
func (p *nameProvider) Connected()                  {}

func (p *nameProvider) Next() (string, bool) {
	server := p.servers[p.next%len(p.servers)]
	p.next++
	return server, p.next%len(p.servers) == 0
}

func ensure(conn *zk.Conn, root string) {
	for {
		_, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return
		}
		fmt.Printf("ERR create %s: %v\n", root, err)
		time.Sleep(time.Second)
	}
}
