//go:build zkcapture

package zkclient_test

// This file regenerates the fixtures in testdata from real servers:
//
//	sudo go test -tags zkcapture -run TestCaptureFixtures ./internal/zookeeper/zkclient/
//
// It is not part of the normal test run.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/stewardhq/steward/internal/zookeeper/zktest"
)

func TestCaptureFixtures(t *testing.T) {
	save := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", name, data)
	}
	get := func(addr, cmd string) []byte {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/commands/" + cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("GET %s: HTTP %d %s", cmd, resp.StatusCode, resp.Header.Get("Content-Type"))
		return body
	}
	config := func(servers []string) []byte {
		t.Helper()
		conn, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		data, stat, err := conn.Get("/zookeeper/config")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("/zookeeper/config stat: %+v", stat)
		return data
	}

	standalone := zktest.Start(t, 1)
	save("stat-standalone.json", get(standalone.AdminAddrs()[0], "stat"))
	save("config-standalone.txt", config(standalone.ClientAddrs()))

	e := zktest.Start(t, 3)
	roles := map[string]string{}
	for _, s := range e.Servers() {
		var v struct {
			ServerStats struct {
				ServerState string `json:"server_state"`
			} `json:"server_stats"`
		}
		if err := json.Unmarshal(get(s.AdminAddr(), "stat"), &v); err != nil {
			t.Fatal(err)
		}
		if roles[v.ServerStats.ServerState] != "" {
			continue
		}
		roles[v.ServerStats.ServerState] = s.AdminAddr()
	}
	// A client on a follower, and a write, so that the stats show a
	// connection and a zxid past the election's.
	var follower string
	for _, s := range e.Servers() {
		if s.AdminAddr() == roles["follower"] {
			follower = s.ClientAddr()
		}
	}
	c, _, err := zk.Connect([]string{follower}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/capture", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	save("stat-leader.json", get(roles["leader"], "stat"))
	save("stat-follower.json", get(roles["follower"], "stat"))
	save("config-ensemble.txt", config(e.ClientAddrs()))

	j, err := e.Join(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect(e.ClientAddrs()[:3], 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.IncrementalReconfig([]string{j.ConfigLine()}, nil, -1); err != nil {
		t.Fatal(err)
	}
	save("config-reconfigured.txt", config(e.ClientAddrs()))
	save("stat-joined.json", get(j.AdminAddr(), "stat"))

	for _, s := range e.Servers()[1:] {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	save("stat-not-serving.json", get(e.Servers()[0].AdminAddr(), "stat"))
	save("ruok-not-serving.json", get(e.Servers()[0].AdminAddr(), "ruok"))
}
