package probe

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// Class is what kind of failure a probe's error is. Status reports a failed
// target by its class and a text that stays the same while the failure
// does ([Describe]): a target that keeps timing out must not rewrite status
// on every probe because one timeout fired before another.
type Class string

// The classes of [Classify].
const (
	// ClassNone is no error.
	ClassNone Class = ""
	// ClassPending: no call has answered yet.
	ClassPending Class = "Pending"
	// ClassTimeout: the target did not answer within the call timeout
	// (a dial, a read or the whole call: whichever timer fired first).
	ClassTimeout Class = "Timeout"
	// ClassRefused: nothing listens at the address.
	ClassRefused Class = "Refused"
	// ClassUnreachable: no route to the address, or its name does not
	// resolve.
	ClassUnreachable Class = "Unreachable"
	// ClassProtocol: the target answered, but not as the protocol says (a
	// connection closed mid-answer, an unexpected status, an answer that
	// does not parse), or answered with an error of the application's own.
	ClassProtocol Class = "Protocol"
)

// Classify returns the class of a probe's error.
func Classify(err error) Class {
	var dns *net.DNSError
	switch {
	case err == nil:
		return ClassNone
	case errors.Is(err, ErrPending):
		return ClassPending
	case isTimeout(err):
		return ClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EHOSTDOWN), errors.Is(err, syscall.ENETDOWN), errors.As(err, &dns):
		return ClassUnreachable
	default:
		return ClassProtocol
	}
}

// Describe returns a text for err that depends only on its class and, for
// an answer the application gave, on that answer: never on a local port, a
// timer or which of several deadlines fired first. Status shows it.
func Describe(err error) string {
	switch Classify(err) {
	case ClassNone:
		return ""
	case ClassPending:
		return ErrPending.Error()
	case ClassTimeout:
		return "timeout: no answer in time"
	case ClassRefused:
		return "refused: nothing listens at the address"
	case ClassUnreachable:
		return "unreachable: no route to the address"
	}
	if closedEarly(err) {
		return "protocol error: the connection closed before the answer"
	}
	return err.Error()
}

// isTimeout reports whether err is any of the timeouts a call can end with:
// its context's deadline, a socket deadline, or a net.Error that says so
// (the HTTP client's own timeout).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closedEarly reports whether the connection ended before a full answer;
// its error text names local ports, which change with every call, or is
// one of net/http's unexported errors for a connection the server closed
// ("http: server closed idle connection").
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "server closed")
}
