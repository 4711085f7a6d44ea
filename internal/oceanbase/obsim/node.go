package obsim

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	vtlog "github.com/dolthub/vitess/go/vt/log"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// Ports an observer listens on.
const (
	SQLPort = 2881
	RPCPort = 2882
)

// Config is one simulated observer's start configuration: what an observer
// takes as start arguments (--appname, --cluster_id, --zone, -p, -P, -o).
type Config struct {
	// Addr is the server's address as the cluster knows it, ip:rpcPort:
	// the address other nodes and BOOTSTRAP and ADD SERVER name it by.
	Addr string
	// SQLListen and RPCListen are where the node listens (default
	// 0.0.0.0:2881 and 0.0.0.0:2882).
	SQLListen, RPCListen string
	// SQLPort is the SQL port the server reports (default 2881).
	SQLPort int
	// ClusterName, ClusterID and Zone are --appname, --cluster_id and
	// --zone: a server joins only a cluster of the same name and id, in the
	// zone it was started for.
	ClusterName string
	ClusterID   int64
	Zone        string
	// Options are -o name=value start options: they become the server's
	// parameters when it joins.
	Options map[string]string
	// DataDir keeps the node's copy of the cluster's state across restarts
	// (an observer's store); empty keeps it in memory.
	DataDir string
	// Knobs set delays and faults.
	Knobs Knobs
	// Resolve maps a server address to the address to dial, for tests that
	// run several nodes in one process; nil dials the address itself.
	Resolve func(addr string) string
	// Trace, when set, is called with every statement a client sends to
	// this node, for tests that count statements.
	Trace func(statement string)
	Log   *slog.Logger
}

// Node is one simulated observer.
type Node struct {
	cfg   Config
	log   *slog.Logger
	start time.Time
	http  *http.Client

	mu         sync.Mutex
	state      *State // nil until the node joins a cluster
	isRS       bool
	lastRS     time.Time // when the RootService was last heard from
	knobs      Knobs
	fired      map[int]int // fault index → times fired
	busy       bool        // a bootstrap is in progress
	savedVer   int64
	sqlL       *mysql.Listener
	rpcL       net.Listener
	rpcServer  *http.Server
	engines    map[int64]*tenantEngine // tenant id → its data's engine, on the RootService
	backupBusy atomic.Bool             // a pass of runBackups is writing
	lastReplay time.Time               // when standbys last read their sources
	push       chan struct{}
	stop       chan struct{}
	wg         sync.WaitGroup
}

// The protocol library logs failed logins and the like to the standard
// logger; the simulator answers them to the client instead.
func init() {
	quiet := func(...any) {}
	quietf := func(string, ...any) {}
	vtlog.Info, vtlog.Warning, vtlog.Error = quiet, quiet, quiet
	vtlog.Infof, vtlog.Warningf, vtlog.Errorf = quietf, quietf, quietf
}

// New returns a node that is not listening yet; Start it.
func New(cfg Config) (*Node, error) {
	if cfg.SQLListen == "" {
		cfg.SQLListen = fmt.Sprintf("0.0.0.0:%d", SQLPort)
	}
	if cfg.RPCListen == "" {
		cfg.RPCListen = fmt.Sprintf("0.0.0.0:%d", RPCPort)
	}
	if cfg.SQLPort == 0 {
		cfg.SQLPort = SQLPort
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("server address %q: %w", cfg.Addr, err)
	}
	if cfg.ClusterName == "" || cfg.Zone == "" {
		return nil, errors.New("a cluster name and a zone are required")
	}
	if err := cfg.Knobs.compile(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: cfg.Log.With("server", cfg.Addr), start: time.Now(),
		http:  &http.Client{Timeout: 3 * time.Second},
		knobs: cfg.Knobs.withDefaults(), fired: map[int]int{},
		push: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	if err := n.load(); err != nil {
		return nil, err
	}
	return n, nil
}

// Start listens on the SQL and RPC ports and starts the node's loops.
func (n *Node) Start() error {
	rpcL, err := net.Listen("tcp", n.cfg.RPCListen)
	if err != nil {
		return err
	}
	sqlL, err := mysql.NewListenerWithConfig(mysql.ListenerConfig{
		Protocol: "tcp", Address: n.cfg.SQLListen, AuthServer: &auth{n: n}, Handler: &handler{n: n},
		ConnReadTimeout: 10 * time.Minute, ConnWriteTimeout: time.Minute,
	})
	if err != nil {
		rpcL.Close()
		return err
	}
	sqlL.ServerVersion = serverVersion(n.knobs.BuildVersion)
	n.mu.Lock()
	n.sqlL, n.rpcL = sqlL, rpcL
	n.lastRS = time.Now()
	n.rpcServer = &http.Server{Handler: n.rpcHandler(), ReadHeaderTimeout: 5 * time.Second}
	n.mu.Unlock()
	n.wg.Add(3)
	go func() { defer n.wg.Done(); sqlL.Accept() }()
	go func() { defer n.wg.Done(); _ = n.rpcServer.Serve(rpcL) }()
	go func() { defer n.wg.Done(); n.loop() }()
	n.log.Info("Observer simulator listening", "sql", sqlL.Addr().String(), "rpc", rpcL.Addr().String(),
		"cluster", n.cfg.ClusterName, "zone", n.cfg.Zone, "joined", n.joined())
	return nil
}

// Stop closes the listeners and waits for the loops: like killing the
// process, except that the state on disk stays.
func (n *Node) Stop() {
	close(n.stop)
	n.sqlL.Close()
	_ = n.rpcServer.Close()
	n.wg.Wait()
}

// Snapshot returns a copy of the node's state, nil before it joined.
func (n *Node) Snapshot() *State {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil {
		return nil
	}
	return n.state.clone()
}

// IsRootService reports whether the node is its cluster's RootService.
func (n *Node) IsRootService() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isRS
}

// SetKnobs replaces the node's knobs.
func (n *Node) SetKnobs(k Knobs) error {
	if err := k.compile(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.knobs, n.fired = k.withDefaults(), map[int]int{}
	return nil
}

func (n *Node) joined() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state != nil
}

func (n *Node) dial(addr string) string {
	if n.cfg.Resolve != nil {
		return n.cfg.Resolve(addr)
	}
	return addr
}

// changed records a change of the state (n.mu held) and pushes it to the
// members soon.
func (n *Node) changed() {
	n.state.Version++
	select {
	case n.push <- struct{}{}:
	default:
	}
}

// load reads the state a previous run left in the data directory.
func (n *Node) load() error {
	if n.cfg.DataDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(n.cfg.DataDir, "obsim-state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("reading the stored state: %w", err)
	}
	if s.ClusterName != n.cfg.ClusterName || s.ClusterID != n.cfg.ClusterID {
		return fmt.Errorf("the store belongs to cluster %s (%d), not %s (%d)", s.ClusterName, s.ClusterID,
			n.cfg.ClusterName, n.cfg.ClusterID)
	}
	n.state, n.savedVer = &s, s.Version
	return nil
}

// save writes the state to the data directory when it changed (n.mu
// held).
func (n *Node) save() {
	if n.cfg.DataDir == "" || n.state == nil || n.state.Version == n.savedVer {
		return
	}
	b, err := json.Marshal(n.state)
	if err == nil {
		tmp := filepath.Join(n.cfg.DataDir, "obsim-state.json.tmp")
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, filepath.Join(n.cfg.DataDir, "obsim-state.json"))
		}
	}
	if err != nil {
		n.log.Error("Cannot save the state", "err", err)
		return
	}
	n.savedVer = n.state.Version
}

// leave forgets the cluster: the server was deleted from it.
func (n *Node) leave() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state, n.isRS = nil, false
	if n.cfg.DataDir != "" {
		_ = os.Remove(filepath.Join(n.cfg.DataDir, "obsim-state.json"))
	}
	n.savedVer = 0
	n.log.Info("Left the cluster")
}

// fault applies the knobs' faults to statement q: a delay, or an error.
func (n *Node) fault(q string) *Error {
	n.mu.Lock()
	var delay time.Duration
	var fail *Error
	for i, f := range n.knobs.Faults {
		if f.re == nil || !f.re.MatchString(q) {
			continue
		}
		if f.Times > 0 && n.fired[i] >= f.Times {
			continue
		}
		n.fired[i]++
		delay += f.Delay.Duration
		if f.Error != "" && fail == nil {
			fail = errorf(4000, "%s", f.Error)
		}
	}
	n.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	return fail
}

// session is a connection's login.
type session struct {
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	// Encryption and Decryption are the hashes of the connection's SET
	// ENCRYPTION and SET DECRYPTION passwords (encryption.go).
	Encryption string   `json:"encryption,omitempty"`
	Decryption []string `json:"decryption,omitempty"`
}

func sessionOf(c *mysql.Conn) session {
	user, tenant, _ := strings.Cut(c.User, "@")
	if tenant == "" {
		tenant = sysTenantName
	}
	s := session{Tenant: tenant, User: user}
	if st, ok := c.ClientData.(*connState); ok {
		s.Encryption = passwordHash(st.encryption)
		for _, pw := range st.decryption {
			s.Decryption = append(s.Decryption, passwordHash(pw))
		}
	}
	return s
}

// auth checks mysql_native_password logins as user@tenant: before the node
// joined a cluster only root of sys with an empty password, afterwards the
// users of the node's copy of the state.
type auth struct{ n *Node }

func (a *auth) AuthMethods() []mysql.AuthMethod {
	return []mysql.AuthMethod{mysql.NewMysqlNativeAuthMethod(a, a)}
}

func (a *auth) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

func (a *auth) HandleUser(string, net.Addr) bool { return true }

func (a *auth) UserEntryWithHash(_ []*x509.Certificate, salt []byte, login string, resp []byte, _ net.Addr) (mysql.Getter, error) {
	user, tenant, _ := strings.Cut(login, "@")
	if tenant == "" {
		tenant = sysTenantName
	}
	password, ok := a.n.password(tenant, user)
	if ok {
		want := mysql.ScrambleMysqlNativePassword(salt, []byte(password))
		if (len(want) == 0 && len(resp) == 0) || subtle.ConstantTimeCompare(resp, want) == 1 {
			return &mysql.StaticUserData{}, nil
		}
	}
	return nil, mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError,
		"Access denied for user '%s'@'%s' (using password: %s)", user, tenant, yesNo(len(resp) > 0))
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// password returns the password of user in tenant, and whether the user
// exists.
func (n *Node) password(tenant, user string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil {
		return "", strings.EqualFold(tenant, sysTenantName) && user == "root"
	}
	t := n.state.tenantByName(tenant)
	if t == nil || t.Status != TenantNormal {
		return "", false
	}
	u := n.state.user(t.ID, user)
	if u == nil {
		return "", false
	}
	return u.Password, true
}

// handler serves the MySQL protocol.
type handler struct{ n *Node }

func (h *handler) NewConnection(*mysql.Conn)                   {}
func (h *handler) ConnectionClosed(*mysql.Conn)                {}
func (h *handler) ConnectionAborted(*mysql.Conn, string) error { return nil }
func (h *handler) ComInitDB(c *mysql.Conn, db string) error {
	if strings.EqualFold(db, "oceanbase") {
		return nil
	}
	if strings.EqualFold(sessionOf(c).Tenant, sysTenantName) {
		return mysql.NewSQLError(1049, "42000", "Unknown database '%s'", db)
	}
	if _, err := h.n.query(context.Background(), c, "USE `"+strings.ReplaceAll(db, "`", "``")+"`"); err != nil {
		return err.sqlError()
	}
	return nil
}
func (h *handler) WarningCount(*mysql.Conn) uint16      { return 0 }
func (h *handler) ComResetConnection(*mysql.Conn) error { return nil }
func (h *handler) ParserOptionsForConnection(*mysql.Conn) (sqlparser.ParserOptions, error) {
	return sqlparser.ParserOptions{}, nil
}

func (h *handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	res, err := h.n.query(ctx, c, strings.Clone(query))
	if err != nil {
		return err.sqlError()
	}
	return callback(res.sqlResult(), false)
}

func (h *handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	pieces, err := sqlparser.SplitStatementToPieces(query)
	if err != nil || len(pieces) == 0 {
		return "", h.ComQuery(ctx, c, query, callback)
	}
	rest := strings.Join(pieces[1:], ";")
	return rest, h.ComQuery(ctx, c, pieces[0], callback)
}

func (h *handler) ComPrepare(_ context.Context, _ *mysql.Conn, _ string, _ *mysql.PrepareData) ([]*querypb.Field, error) {
	return nil, nil
}

// ComStmtExecute runs a prepared statement with its arguments inlined.
func (h *handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	q, err := inline(prepare)
	if err != nil {
		return err
	}
	res, qerr := h.n.query(ctx, c, q)
	if qerr != nil {
		return qerr.sqlError()
	}
	return callback(res.sqlResult())
}

// inline replaces the statement's ? markers with its bound arguments.
func inline(p *mysql.PrepareData) (string, error) {
	var b strings.Builder
	arg := 0
	for _, r := range p.PrepareStmt {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		arg++
		bv, ok := p.BindVars[fmt.Sprintf("v%d", arg)]
		if !ok {
			return "", mysql.NewSQLError(1210, "HY000", "Incorrect arguments to EXECUTE")
		}
		v, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return "", err
		}
		if v.IsQuoted() {
			b.WriteString("'" + strings.ReplaceAll(v.ToString(), "'", "''") + "'")
		} else {
			b.WriteString(v.ToString())
		}
	}
	return b.String(), nil
}
