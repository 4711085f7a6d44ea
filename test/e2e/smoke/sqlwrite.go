package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// sqlWrite inserts the rows 1, 2, ... into table (db.name, one integer
// column id; the database and the table are created if absent) through the MySQL server at server until SIGTERM,
// every interval, each insert on a new connection (through a MatrixOne
// proxy, each may reach another CN) within 2 s. It prints "ACK <id>
// <RFC 3339 time>" for each insert acknowledged, "ERR <id> <error>" for
// each that failed (retried under the same id: it may have been applied),
// and "STOP" at SIGTERM. The benchmarks read the longest pause between
// two acknowledgements from it.
func sqlWrite(server, user, password, table string, interval time.Duration) {
	db := openSQL(server, user, password)
	defer db.Close()
	db.SetMaxIdleConns(0)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	exec := func(statement string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := db.ExecContext(ctx, statement)
		return err
	}
	for n := 1; ; {
		select {
		case <-stop:
			fmt.Println("STOP")
			return
		case <-time.After(interval):
		}
		if n == 1 {
			db, _, _ := strings.Cut(table, ".")
			err := exec("create database if not exists " + db)
			if err == nil {
				err = exec("create table if not exists " + table + " (id int primary key)")
			}
			if err != nil {
				fmt.Printf("ERR 0 %v\n", err)
				continue
			}
		}
		// An insert retried after a failure that was applied after all
		// finds its row: that is an acknowledgement too.
		err := exec(fmt.Sprintf("insert into %s values (%d) on duplicate key update id = id", table, n))
		if err != nil {
			fmt.Printf("ERR %d %v\n", n, err)
			continue
		}
		fmt.Printf("ACK %d %s\n", n, time.Now().UTC().Format(time.RFC3339Nano))
		n++
	}
}
