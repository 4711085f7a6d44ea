// Command smoke is the workload of the end-to-end suite, packed into a
// one-file image: `serve` answers HTTP with its host name and what it wrote
// to its volume; `get`, `lookup` and `dial` are run with `kubectl exec` to
// test DNS, Services and egress isolation from inside a pod; `zkwrite` and
// `zkcheck` are a ZooKeeper client that writes znodes throughout a test
// and lists them at its end; `gpss` is a client of GPSS's job API. It
// needs no shell or libc in the image.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: smoke serve|get URL|lookup NAME|dial ADDRESS|zkwrite|zkcheck|gpss|sql QUERY|sql-session STATEMENT...|sql-wait|sql-write|obsim-knobs JSON")
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	timeout := flags.Duration("timeout", 5*time.Second, "deadline of get, lookup and dial")
	addr := flags.String("listen", ":8080", "address serve listens on")
	dataDir := flags.String("data", "/data", "volume serve writes to")
	zkServer := flags.String("server", "", "ZooKeeper connect string of zkwrite and zkcheck; GPSS gRPC address of gpss; MySQL server of sql and sql-session; observer of obsim-knobs")
	user := flags.String("user", "root", "user of sql (user@tenant)")
	password := flags.String("password", "", "password of sql")
	zkRoot := flags.String("root", "/e2e", "parent znode of zkwrite and zkcheck")
	interval := flags.Duration("interval", 50*time.Millisecond, "pause between two writes of zkwrite and sql-write")
	count := flags.Int("count", 0, "writes of zkwrite; 0: until SIGTERM")
	table := flags.String("table", "bench.t", "table sql-write inserts into (db.name)")
	_ = flags.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch os.Args[1] {
	case "serve":
		serve(*addr, *dataDir)
	case "get":
		get(ctx, flags.Arg(0))
	case "lookup":
		addrs, err := net.DefaultResolver.LookupHost(ctx, flags.Arg(0))
		if err != nil {
			fail("lookup %s: %v", flags.Arg(0), err)
		}
		for _, a := range addrs {
			fmt.Println(a)
		}
	case "dial":
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", flags.Arg(0))
		if err != nil {
			fail("dial %s: %v", flags.Arg(0), err)
		}
		conn.Close()
		fmt.Println("connected")
	case "zkwrite":
		zkWrite(*zkServer, *zkRoot, *interval, *count)
	case "zkcheck":
		zkCheck(ctx, *zkServer, *zkRoot)
	case "gpss":
		gpssJobs(ctx, *zkServer, flags.Args())
	case "sql":
		obSQL(ctx, *zkServer, *user, *password, flags.Arg(0))
	case "sql-wait":
		sqlWait(ctx, *zkServer, *user, *password)
	case "sql-session":
		sqlSession(ctx, *zkServer, *user, *password, flags.Args())
	case "sql-write":
		sqlWrite(*zkServer, *user, *password, *table, *interval)
	case "obsim-knobs":
		obsimKnobs(ctx, *zkServer, flags.Arg(0))
	default:
		fail("unknown command %q", os.Args[1])
	}
}

func serve(addr, dataDir string) {
	host, _ := os.Hostname()
	marker := filepath.Join(dataDir, "first-host")
	// The first incarnation of a pod writes its name; later ones find it,
	// which shows the volume outlived the container.
	if _, err := os.Stat(marker); os.IsNotExist(err) {
		if err := os.WriteFile(marker, []byte(host), 0o644); err != nil {
			fail("write %s: %v", marker, err)
		}
	}
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		data, err := os.ReadFile(marker)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "host=%s volume=%s\n", host, data)
	})
	fmt.Printf("Serving on %s as %s\n", addr, host)
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second}
	fail("serve: %v", srv.ListenAndServe())
}

func get(ctx context.Context, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		fail("%v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("get %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fail("get %s: %s: %s", url, resp.Status, body)
	}
	os.Stdout.Write(body)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
