package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/pkg/procs"
)

// statsConn reads PostgreSQL's own counters from the cluster's postgres database, so that reading them adds
// nothing to the counts of ace's database.
type statsConn struct {
	mu      sync.Mutex
	conn    *pgx.Conn
	pg      *pgtest.Cluster
	db      string // ace's database
	dbid    uint32
	version string

	peakMu    sync.Mutex
	peakConns int
	sumConns  int // since resetMean, over samples
	samples   int
	stopPeak  chan struct{}
	peakDone  chan struct{}
}

func openStats(ctx context.Context, pg *pgtest.Cluster, aceURL string) (*statsConn, error) {
	cfg, err := pgx.ParseConfig(aceURL)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return nil, fmt.Errorf("stats connection: %w", err)
	}
	s := &statsConn{conn: conn, pg: pg, db: cfg.Database, stopPeak: make(chan struct{}), peakDone: make(chan struct{})}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	if err := conn.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", s.db).Scan(&s.dbid); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("database %s: %w", s.db, err)
	}
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	go s.samplePeak()
	return s, nil
}

// samplePeak samples the connections to ace's database every 250 ms, for the peak of a phase.
func (s *statsConn) samplePeak() {
	defer close(s.peakDone)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopPeak:
			return
		case <-t.C:
		}
		n, err := s.connections(context.Background())
		if err != nil {
			continue
		}
		s.peakMu.Lock()
		s.peakConns = max(s.peakConns, n)
		s.sumConns += n
		s.samples++
		s.peakMu.Unlock()
	}
}

// resetPeak starts a new phase's peak and returns the last one's.
func (s *statsConn) resetPeak() int {
	s.peakMu.Lock()
	defer s.peakMu.Unlock()
	p := s.peakConns
	s.peakConns = 0
	return p
}

// peakAtLeast raises the current peak to n.
func (s *statsConn) peakAtLeast(n int) {
	s.peakMu.Lock()
	s.peakConns = max(s.peakConns, n)
	s.peakMu.Unlock()
}

// resetMean starts a new mean of the connections held and returns the last one's.
func (s *statsConn) resetMean() float64 {
	s.peakMu.Lock()
	defer s.peakMu.Unlock()
	m := float64(s.sumConns) / float64(max(s.samples, 1))
	s.sumConns, s.samples = 0, 0
	return m
}

func (s *statsConn) connections(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	err := s.conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datid = $1", s.dbid).Scan(&n)
	return n, err
}

func (s *statsConn) close() {
	close(s.stopPeak)
	<-s.peakDone
	s.conn.Close(context.Background())
}

// sizes are the bytes of ace's tables (with their indexes and TOAST) and River's job table.
type sizes struct{ runs, events, jobs int64 }

func (s *statsConn) tableSizes(ctx context.Context) (sizes, error) {
	// The sizes are read in ace's database itself: one query, which is not counted (it runs after the last snapshot
	// of its phase).
	conn, err := pgx.Connect(ctx, s.pg.URL(s.db))
	if err != nil {
		return sizes{}, err
	}
	defer conn.Close(ctx)
	var z sizes
	err = conn.QueryRow(ctx, `SELECT pg_total_relation_size('runs'), pg_total_relation_size('events'),
		pg_total_relation_size('river_job')`).Scan(&z.runs, &z.events, &z.jobs)
	return z, err
}

func (z sizes) perRun(n int) string {
	kib := func(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/1024/float64(max(n, 1))) }
	return fmt.Sprintf("runs %s, events %s, river_job %s (pages are allocated 8 KiB at a time: few runs overstate it)",
		kib(z.runs), kib(z.events), kib(z.jobs))
}

// snapshot is the cumulative counters at one moment. Every counter is exact at the moment it is read:
// pg_stat_statements counts as statements end, the next transaction ID and the WAL position are the server's
// own (pg_stat_database's and pg_stat_wal's counters are not used: backends report them up to 10 s late).
type snapshot struct {
	at         time.Time
	statements int64            // statements ace's database ran (pg_stat_statements)
	execMS     float64          // their execution time
	commits    int64            // of them, COMMITs: explicit transactions
	byQuery    map[int64]qcount // the statements, per normalised statement
	writeXacts int64            // transactions that wrote: transaction IDs handed out (nothing else writes)
	walBytes   int64            // WAL written by the whole cluster
	conns      int              // connections to ace's database now
	cpu        time.Duration    // CPU used by every postgres process (the postmaster, its children, those reaped)
	gh         ghCounts
}

type qcount struct {
	calls int64
	text  string
}

func (w *world) snap(ctx context.Context) (snapshot, error) {
	s := w.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := snapshot{at: time.Now(), byQuery: map[int64]qcount{}}
	rows, err := s.conn.Query(ctx, "SELECT queryid, calls, total_exec_time, query FROM pg_stat_statements WHERE dbid = $1", s.dbid)
	if err != nil {
		return sn, fmt.Errorf("pg_stat_statements: %w", err)
	}
	for rows.Next() {
		var id, calls int64
		var ms float64
		var text string
		if err := rows.Scan(&id, &calls, &ms, &text); err != nil {
			rows.Close()
			return sn, err
		}
		sn.statements += calls
		sn.execMS += ms
		if strings.EqualFold(strings.TrimSpace(text), "commit") {
			sn.commits += calls
		}
		sn.byQuery[id] = qcount{calls: calls, text: text}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sn, err
	}
	// pg_current_snapshot assigns no transaction ID of its own.
	err = s.conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
		pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		(SELECT count(*) FROM pg_stat_activity WHERE datid = $1)`, s.dbid).Scan(&sn.writeXacts, &sn.walBytes, &sn.conns)
	if err != nil {
		return sn, fmt.Errorf("transaction ID and WAL position: %w", err)
	}
	sn.cpu = postgresCPU(s.pg.PID())
	sn.gh = w.ghp.counts()
	return sn, nil
}

// delta is what happened between two snapshots.
type delta struct {
	d          time.Duration
	meanConns  float64 // connections held, on average over a measured window (measure sets it)
	statements int64
	execMS     float64
	commits    int64
	writeXacts int64
	walBytes   int64
	cpu        time.Duration
	gh         ghCounts
	top        []qcount // statements by calls, most first
}

func diff(a, b snapshot) delta {
	d := delta{d: b.at.Sub(a.at), statements: b.statements - a.statements, execMS: b.execMS - a.execMS,
		commits: b.commits - a.commits, writeXacts: b.writeXacts - a.writeXacts, walBytes: b.walBytes - a.walBytes,
		cpu: b.cpu - a.cpu, gh: b.gh.sub(a.gh)}
	for id, q := range b.byQuery {
		if n := q.calls - a.byQuery[id].calls; n > 0 {
			d.top = append(d.top, qcount{calls: n, text: q.text})
		}
	}
	sortByCalls(d.top)
	return d
}

// rate is a count per second over the delta.
func (d delta) rate(n int64) float64 { return float64(n) / d.d.Seconds() }

// postgresCPU is the CPU every postgres process used so far: the postmaster and its children (the backends,
// one per connection, and the background processes), and the children it reaped (a backend whose connection
// closed). Clock ticks of /proc, 10 ms each.
func postgresCPU(postmaster int) time.Duration {
	total := reapedCPU(postmaster)
	for _, pid := range append([]int{postmaster}, procs.Descendants(postmaster)...) {
		if st, err := procs.Read(pid); err == nil {
			total += st.CPU
		}
	}
	return total
}

// reapedCPU reads cutime and cstime (fields 16 and 17) of /proc/<pid>/stat.
func reapedCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0
	}
	cu, _ := strconv.ParseInt(f[13], 10, 64)
	cs, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(cu+cs) * 10 * time.Millisecond
}
