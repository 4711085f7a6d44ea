package forward

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"sync"
	"time"
)

// Dialer opens the inside end of a relayed connection.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Serve accepts connections on ln and relays each to target through dial
// until ctx ends.
func Serve(ctx context.Context, ln net.Listener, target string, dial Dialer) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go relay(ctx, conn, target, dial)
	}
}

func relay(ctx context.Context, client net.Conn, target string, dial Dialer) {
	defer client.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	upstream, err := dial(dctx, "tcp", target)
	if err != nil {
		log.Printf("Dial %s failed: %v", target, err)
		return
	}
	defer upstream.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Half-close so the other direction can finish its reply.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	wg.Wait()
}
