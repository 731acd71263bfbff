// Package pgtest gives tests a real PostgreSQL: a throwaway cluster of Debian's postgresql package (initdb, then
// postgres itself) in a temp dir, on 127.0.0.1 and a free port, started once per test package and stopped by its
// PID when the package's tests end, with a database of its own for each test.
//
// A test package opts in with TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and each test asks for a database with pgtest.URL(t). A test that shuts PostgreSQL down or restarts it takes a
// cluster of its own, pgtest.Own(t) (Shutdown, then Restart on the same port and data dir). Where PostgreSQL is
// not installed the test is skipped (and fails when CI=true, where .ci/run installs it).
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/jackc/pgx/v5"
)

// ErrNotInstalled is returned by Start when PostgreSQL's server binaries are not on this machine.
var ErrNotInstalled = errors.New("PostgreSQL's server binaries (initdb, postgres) are not installed " +
	"(Debian: apt-get install postgresql)")

// Cluster is a running PostgreSQL cluster that belongs to this process.
type Cluster struct {
	dir  string
	data string
	bin  string
	cred *syscall.Credential
	port int
	// crashSafe: a committed transaction survives an immediate shutdown (synchronous_commit on).
	crashSafe bool
	settings  []string // postgres -c settings over the defaults
	log       *tail

	mu   sync.Mutex
	seq  int
	cmd  *exec.Cmd       // the postmaster: replaced by Restart
	done <-chan struct{} // closed when cmd has exited
}

// Start initialises a cluster in a new temp dir and starts it, listening on 127.0.0.1 only (no Unix socket),
// tuned for tests: no fsync, no durability, minimal WAL. Run as root, it runs as the user nobody (initdb refuses root).
// Each of settings ("name=value", as postgres -c takes it) overrides those defaults: a benchmark asks for a
// durable server, or loads pg_stat_statements.
func Start(ctx context.Context, settings ...string) (*Cluster, error) {
	return startCluster(ctx, false, settings)
}

// startCluster is Start; crashSafe keeps what a commit wrote across a crash of postgres (an immediate shutdown):
// each commit's WAL is written to the kernel before it returns (synchronous_commit; still no fsync, as the machine
// does not crash).
func startCluster(ctx context.Context, crashSafe bool, settings []string) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ace-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c, err := start(ctx, bin, dir, cred, crashSafe, settings)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func start(ctx context.Context, bin, dir string, cred *syscall.Credential, crashSafe bool, settings []string) (*Cluster, error) {
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: hand %s to the unprivileged user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir, initdb.Env = dir, pgEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	// A free port can be taken by someone else between finding it and postgres binding it: try a few.
	var errs []error
	for range 3 {
		c, err := run(bin, dir, data, cred, crashSafe, settings)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// run starts postgres on a free port and waits until it accepts connections.
func run(bin, dir, data string, cred *syscall.Credential, crashSafe bool, settings []string) (*Cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, data: data, bin: bin, cred: cred, port: port, crashSafe: crashSafe, settings: settings, log: &tail{}}
	if err := c.launch(); err != nil {
		return nil, err
	}
	if err := c.waitReady(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// launch starts the postmaster on the cluster's data dir and port.
func (c *Cluster) launch() error {
	syncCommit := "synchronous_commit=off"
	if c.crashSafe {
		syncCommit = "synchronous_commit=on"
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", syncCommit, "-c", "full_page_writes=off",
		"-c", "max_connections=500", "-c", "shared_buffers=32MB", "-c", "log_min_messages=warning",
		"-c", "log_min_error_statement=panic", "-c", "wal_level=minimal", "-c", "max_wal_senders=0", "-c", "wal_buffers=16MB")
	for _, s := range c.settings {
		cmd.Args = append(cmd.Args, "-c", s) // the last of a name wins
	}
	cmd.Dir, cmd.Env = c.dir, pgEnv()
	// If this process dies without stopping it, postgres gets SIGQUIT (immediate shutdown) rather than living on.
	// Forked from a thread of its own (procs.StartOnOwnThread): forked from any thread, it went down in the middle
	// of a test when one of ace's tmux control clients ended on that thread (a fleet test's six agents never
	// started, every host's store refused).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	cmd.Stderr = c.log
	done, err := procs.StartOnOwnThread(cmd)
	if err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.mu.Lock()
	c.cmd, c.done = cmd, done
	c.mu.Unlock()
	return nil
}

// postmaster is the current postmaster process and the channel closed when it exits.
func (c *Cluster) postmaster() (*exec.Cmd, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd, c.done
}

// waitReady connects until postgres answers, it exits, or the timeout passes.
func (c *Cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		_, done := c.postmaster()
		select {
		case <-done:
			return fmt.Errorf("pgtest: postgres exited on start:\n%s", c.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres did not accept connections within %s: %w\n%s", timeout, err, c.log)
		}
	}
}

// URL is the connection URL of database db in the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// PID is the postmaster's process id (a new one after Restart).
func (c *Cluster) PID() int {
	cmd, _ := c.postmaster()
	return cmd.Process.Pid
}

// CreateDatabase creates a new, empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	c.mu.Lock()
	c.seq++
	name := fmt.Sprintf("test_%d", c.seq)
	c.mu.Unlock()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Copying template1's files is several times faster than WAL-logging them block by block (PostgreSQL 15's
	// default) on a cluster with wal_level=minimal.
	create := "CREATE DATABASE " + name
	if v, _ := strconv.Atoi(strings.SplitN(conn.PgConn().ParameterStatus("server_version"), ".", 2)[0]); v >= 15 {
		create += " STRATEGY FILE_COPY"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// Stop shuts postgres down (fast shutdown: SIGINT to its PID, SIGKILL after 10 s) and removes its files.
func (c *Cluster) Stop() error {
	return errors.Join(c.Shutdown(Fast), os.RemoveAll(c.dir))
}

// ShutdownMode is how Shutdown asks the postmaster to stop (PostgreSQL's shutdown modes, by signal).
type ShutdownMode syscall.Signal

const (
	// Fast ends every session at once, checkpoints and exits (SIGINT): `pg_ctl stop`, a service restart.
	Fast = ShutdownMode(syscall.SIGINT)
	// Immediate exits without a checkpoint (SIGQUIT), as a crash does: the next start recovers from the WAL.
	Immediate = ShutdownMode(syscall.SIGQUIT)
)

// Shutdown stops the postmaster by its PID and waits until it has exited (SIGKILL after 10 s), keeping the data
// dir and the port: Restart starts it again there. Every client connection is gone with it.
func (c *Cluster) Shutdown(mode ShutdownMode) error {
	cmd, done := c.postmaster()
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.Signal(mode)); err != nil {
		return fmt.Errorf("pgtest: signal postgres (pid %d): %w", cmd.Process.Pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("pgtest: postgres (pid %d) did not shut down within 10s: killed", cmd.Process.Pid)
	}
}

// Restart starts the postmaster again after Shutdown, on the same data dir and port (clients reconnect to the
// same URL), and waits until it accepts connections. Its PID is a new one.
func (c *Cluster) Restart(ctx context.Context) error {
	if _, done := c.postmaster(); done != nil {
		select {
		case <-done:
		default:
			return fmt.Errorf("pgtest: restart: postgres (pid %d) still runs: Shutdown first", c.PID())
		}
	}
	if err := c.launch(); err != nil {
		return err
	}
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := c.waitReady(timeout); err != nil {
		return fmt.Errorf("pgtest: restart on port %d: %w", c.port, err)
	}
	return nil
}

// binDir finds PostgreSQL's server binaries: Debian keeps them in /usr/lib/postgresql/<version>/bin, off PATH
// (the newest version wins); elsewhere initdb is on PATH.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	version := func(p string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(p))), 64)
		return v
	}
	slices.SortFunc(found, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	if len(found) > 0 {
		return filepath.Dir(found[len(found)-1]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNotInstalled
}

// unprivileged is the user postgres runs as: nobody when this process is root (PostgreSQL refuses to run as
// root), else this process's own (nil).
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, PostgreSQL needs an unprivileged user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user nobody: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// pgEnv is the environment of PostgreSQL's programs: this one's, without anything that would point them at
// another server or locale.
func pgEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LANG=C")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last lines postgres wrote, for the message of a failure.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sc := bufio.NewScanner(strings.NewReader(t.part + string(p)))
	t.part = ""
	for sc.Scan() {
		t.lines = append(t.lines, sc.Text())
	}
	if len(p) > 0 && p[len(p)-1] != '\n' && len(t.lines) > 0 {
		t.part, t.lines = t.lines[len(t.lines)-1], t.lines[:len(t.lines)-1]
	}
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(slices.Clone(t.lines), t.part), "\n")
}
