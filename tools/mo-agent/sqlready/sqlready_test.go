package sqlready

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// server is a fake MySQL server speaking just enough of the protocol (the
// v10 greeting, mysql_native_password, one COM_QUERY) to stand for a
// MatrixOne CN or proxy in each of the ways the probe must tell apart.
type server struct {
	// greet: send the greeting (a proxy that accepts and never greets
	// when false).
	greet bool
	// login is the answer to the client's login: "ok", "hang" (never
	// answer), "close", or an error packet's "code:message".
	login string
	// query is the answer to the statement: "one" (a row holding 1),
	// "hang", or "code:message".
	query string
	// password is root's; a login with another is refused (1045).
	password string
}

var salt = []byte("abcdefghijklmnopqrst") // 20 bytes

func (s server) start(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return l.Addr().String()
}

func (s server) serve(c net.Conn) {
	defer c.Close()
	hang := func() { _, _ = io.Copy(io.Discard, c) }
	if !s.greet {
		hang()
		return
	}
	const caps = 1 | 0x200 | 0x2000 | 0x8000 | 0x80000 // long password, 4.1, transactions, secure connection, plugin auth
	var g bytes.Buffer
	g.WriteByte(10)
	g.WriteString("8.0.30-MatrixOne-v1.2.4\x00")
	_ = binary.Write(&g, binary.LittleEndian, uint32(7))
	g.Write(salt[:8])
	g.WriteByte(0)
	_ = binary.Write(&g, binary.LittleEndian, uint16(caps&0xffff))
	g.WriteByte(45)
	_ = binary.Write(&g, binary.LittleEndian, uint16(2))
	_ = binary.Write(&g, binary.LittleEndian, uint16(caps>>16))
	g.WriteByte(21)
	g.Write(make([]byte, 10))
	g.Write(salt[8:])
	g.WriteByte(0)
	g.WriteString("mysql_native_password\x00")
	if writePacket(c, 0, g.Bytes()) != nil {
		return
	}
	resp, err := readPacket(c)
	if err != nil {
		return
	}
	switch {
	case s.login == "hang":
		hang()
		return
	case s.login == "close":
		return
	case s.login != "ok":
		_ = writePacket(c, 2, errPacket(s.login))
		return
	case !bytes.Contains(resp, scramble(s.password)):
		_ = writePacket(c, 2, errPacket("1045:Access denied for user root. internal error: check password failed"))
		return
	}
	if writePacket(c, 2, okPacket()) != nil {
		return
	}
	q, err := readPacket(c)
	if err != nil || len(q) == 0 || q[0] != 3 {
		return
	}
	switch s.query {
	case "hang":
		hang()
	case "one":
		column := lenenc("def", "", "", "", "1", "")
		column = append(column, 0x0c, 63, 0, 1, 0, 0, 0, 8, 0x81, 0, 0, 0, 0)
		for i, p := range [][]byte{{1}, column, eofPacket(), lenenc("1"), eofPacket()} {
			if writePacket(c, byte(i+1), p) != nil {
				return
			}
		}
		hang()
	default:
		_ = writePacket(c, 1, errPacket(s.query))
	}
}

// scramble is mysql_native_password's answer for password to salt.
func scramble(password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h3 := sha1.Sum(append(append([]byte{}, salt...), h2[:]...))
	for i := range h3 {
		h3[i] ^= h1[i]
	}
	return h3[:]
}

func writePacket(c net.Conn, seq byte, payload []byte) error {
	header := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	_, err := c.Write(append(header, payload...))
	return err
}

func readPacket(c net.Conn) ([]byte, error) {
	header := make([]byte, 4)
	if _, err := io.ReadFull(c, header); err != nil {
		return nil, err
	}
	payload := make([]byte, int(header[0])|int(header[1])<<8|int(header[2])<<16)
	_, err := io.ReadFull(c, payload)
	return payload, err
}

func okPacket() []byte  { return []byte{0, 0, 0, 2, 0, 0, 0} }
func eofPacket() []byte { return []byte{0xfe, 0, 0, 2, 0} }

func errPacket(codeMessage string) []byte {
	code, message, _ := strings.Cut(codeMessage, ":")
	var n uint16
	for _, d := range code {
		n = n*10 + uint16(d-'0')
	}
	p := []byte{0xff, byte(n), byte(n >> 8), '#'}
	p = append(p, "HY000"...)
	return append(p, message...)
}

func lenenc(ss ...string) []byte {
	var b []byte
	for _, s := range ss {
		b = append(append(b, byte(len(s))), s...)
	}
	return b
}

func TestCheck(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, tc := range []struct {
		name     string
		server   server
		password string
		refused  bool
		err      string
	}{
		{name: "served", server: server{greet: true, login: "ok", query: "one", password: "secret"}, password: "secret"},
		{name: "the login refused: the server read its catalog", server: server{greet: true, login: "ok", query: "one", password: "changed"},
			password: "secret", refused: true},
		{name: "accepts and never greets (the proxy while the TN restarts)", server: server{}, err: "deadline exceeded"},
		{name: "greets and never answers the login (a CN waiting for its logtail)", server: server{greet: true, login: "hang"},
			err: "deadline exceeded"},
		{name: "closes the connection after the login", server: server{greet: true, login: "close"}, err: "handshake"},
		{name: "no CN behind the proxy", server: server{greet: true, login: "20101:internal error: no available CN server"},
			err: "no available CN server"},
		{name: "the statement never answered", server: server{greet: true, login: "ok", query: "hang"}, err: "deadline exceeded"},
		{name: "the statement failed", server: server{greet: true, login: "ok", query: "20101:internal error: txn closed"},
			err: "txn closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.server.start(t)
			start := time.Now()
			r, err := Check(context.Background(), addr, "root", tc.password, timeout)
			if took := time.Since(start); took > timeout+time.Second {
				t.Errorf("took %s, over its timeout %s", took, timeout)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v (%v), want an error with %q", err, r, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Refused != tc.refused {
				t.Errorf("refused %v, want %v (%v)", r.Refused, tc.refused, r)
			}
		})
	}
}

func TestCheckNothingListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := Check(context.Background(), addr, "root", "", time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v, want connection refused", err)
	}
}
