package obsim

import (
	"fmt"

	"github.com/dolthub/vitess/go/mysql"
)

// Error is an error the simulator answers a statement with, as an
// observer's error packet: OceanBase's MySQL-mode code and SQL state. The
// codes follow OceanBase's error list where the surface notes name one; the
// rest are OceanBase's generic ones. Steward's controllers do not branch on
// codes: they read the views again.
type Error struct {
	Code  int    `json:"code"`
	State string `json:"state"`
	Msg   string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Msg) }

func (e *Error) sqlError() error { return mysql.NewSQLError(e.Code, e.State, "%s", e.Msg) }

// Codes of the errors the simulator answers with.
const (
	codeInternal     = 4016 // OB_ERR_UNEXPECTED
	codeInvalidArg   = 4002 // OB_INVALID_ARGUMENT
	codeNotInit      = 4006 // OB_NOT_INIT: the server has not joined a cluster
	codeEntryExist   = 4010 // OB_ENTRY_EXIST (unverified)
	codeEntryMissing = 4018 // OB_ENTRY_NOT_EXIST
	codeNotAllowed   = 4179 // OB_OP_NOT_ALLOW
	codeNoResource   = 4733 // OB_ZONE_RESOURCE_NOT_ENOUGH (unverified)
	codeSyntax       = 1064 // ER_PARSE_ERROR
	codeAccess       = 1045 // ER_ACCESS_DENIED_ERROR
	codeRPC          = 4122 // OB_RPC_CONNECT_ERROR: a peer could not be reached
)

func errorf(code int, format string, args ...any) *Error {
	state := "HY000"
	switch code {
	case codeSyntax:
		state = "42000"
	case codeAccess:
		state = "28000"
	}
	return &Error{Code: code, State: state, Msg: fmt.Sprintf(format, args...)}
}

func notAllowed(format string, args ...any) *Error { return errorf(codeNotAllowed, format, args...) }
func invalid(format string, args ...any) *Error    { return errorf(codeInvalidArg, format, args...) }
func missing(format string, args ...any) *Error    { return errorf(codeEntryMissing, format, args...) }
