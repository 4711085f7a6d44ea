package s3

import (
	"context"
	"net"
)

// NewDialing is New with every connection dialed to addr, whatever host
// the request names: a test's stand-in for DNS, which would resolve a
// virtual-hosted bucket's host name in a cluster.
func NewDialing(loc Location, addr string) (*Client, error) {
	var d net.Dialer
	return newClient(loc, func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	})
}

// CopyPartSize is the part size of CopyTo's uploads.
const CopyPartSize = copyPartSize
