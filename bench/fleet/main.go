// Command fleet benchmarks what a fleet of ace hosts costs the PostgreSQL they share and the GitHub they talk to
// (the "Fleet" issue; docs/SCALE.md reasons from its figures). It starts a PostgreSQL of its own (pgtest: initdb
// and postgres in a temp dir, durable — fsync and synchronous commits on — with pg_stat_statements), a fake GitHub
// with -repos repositories behind a proxy that counts requests by endpoint (304s apart), and -hosts simulated hosts
// in this process: each is ace as `ace poll` makes it (service.Open with dispatch, StartQueue: its own River client
// and connection pool, heartbeats, root and tmux server), with the scripted fake agent (this binary run again) in
// its tmux. Every counter is exact (statements from pg_stat_statements, write transactions from the transaction
// IDs handed out, WAL from the WAL position, CPU of every postgres process from /proc). Figures are printed beside
// their baselines, all measured in the same run:
//
//   - 1: database load per host: one host alone for -window, then -hosts hosts for -window, no runs: statements,
//     write transactions, COMMITs and WAL per second, connections held, postgres CPU; per host beside one host
//     alone. And dispatch: one pass per -poll for the whole fleet, its GitHub requests (billed and 304) and time.
//   - 2: database load per run: -issues issues labelled at once over the repositories, spread over the hosts
//     (poll.max_concurrent issues/hosts each, rounded up), each agent working -work: statements, write
//     transactions, WAL, postgres CPU and GitHub requests (by endpoint) per run from label to pull request, beyond
//     the idle fleet's load meanwhile; per run-minute while every agent works; the latency of job fetch (River's
//     queue wait: due to worked) of every visit; disk per run.
//   - 3: following pull requests: every run waits at follow_pr for -follow-looks looks (one per -poll):
//     statements, write transactions and GitHub requests per run and look.
//   - 4: retention: the store after -retention runs (copies of a figure-2 run) over -retention-days, kept for
//     ever and pruned with store.keep's default of 30 days: database size, ace's tables and WAL per 1,000 runs.
//   - 5: idle agents and throughput: -slots-hosts `ace poll` processes with poll.max_concurrent -slots-per-host get
//     -slots-issues issues at once, follow-through on and the pull requests left open, one host killed -9 after
//     -slots-kill: issues a minute and the oldest issue's wait with pr.release_after as it comes (10m), beside the
//     same with "1s" (-slots-runs of each, in turns); the most live agents a host ran at once, from the process table.
//
// Intervals are ace's defaults (monitor.interval 1s: an idle worker asks for due jobs every second; host.dead_after
// 2m: a heartbeat every 30s) except poll.interval, -poll (default 10s instead of 2m), so that dispatch passes and
// follow looks happen within a benchmark; their figures are per pass and per look.
//
//	go run ./bench/fleet                                   # 20 hosts, 40 issues, 10 repositories
//	go run ./bench/fleet -hosts 100 -issues 100 -repos 100
//	go run ./bench/fleet -hosts 100 -issues 100 -repos 100 -pool 2 -follow-looks 0
//	go run ./bench/fleet -slots-only                       # figure 5 alone
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/cli"
)

func main() {
	// The panes run this binary again: as the secret-injecting launcher, then as the fake agent.
	if code, ok := cli.Child(os.Args[1:]); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "ace" { // figure 5's hosts: `ace poll`
		os.Args = append(os.Args[:1], os.Args[2:]...)
		os.Exit(cli.Main())
	}
	var o options
	flag.IntVar(&o.hosts, "hosts", 20, "simulated hosts sharing the database")
	flag.IntVar(&o.issues, "issues", 40, "issues labelled at once in figure 2")
	flag.IntVar(&o.repos, "repos", 10, "repositories every host is configured with (dispatch lists each, every -poll)")
	flag.IntVar(&o.pool, "pool", 0, "pool_max_conns of each host's connection pool (0 = pgx's default, max(4, CPUs))")
	flag.DurationVar(&o.work, "work", 60*time.Second, "how long each agent works on its issue")
	flag.DurationVar(&o.window, "window", 30*time.Second, "how long figure 1 measures each fleet")
	flag.DurationVar(&o.poll, "poll", 10*time.Second, "poll.interval: dispatch passes and follow looks")
	flag.IntVar(&o.followLooks, "follow-looks", 3, "follow_pr looks measured in figure 3 (0 = skip)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a phase after this long")
	flag.IntVar(&o.retention, "retention", 10000, "runs written in figure 4, kept for ever and with store.keep (0 = skip)")
	flag.IntVar(&o.retentionDays, "retention-days", 60, "days figure 4's runs are spread over")
	flag.BoolVar(&o.keep, "keep", false, "keep the benchmark's directory (logs, database) and print where")
	flag.IntVar(&o.slotsIssues, "slots-issues", 12, "issues labelled at once in figure 5 (0 = skip)")
	flag.IntVar(&o.slotsHosts, "slots-hosts", 3, "`ace poll` hosts of figure 5")
	flag.IntVar(&o.slotsPerHost, "slots-per-host", 3, "poll.max_concurrent of each host of figure 5")
	flag.DurationVar(&o.slotsKill, "slots-kill", 10*time.Second, "when figure 5 kills its last host -9, after the labels")
	flag.IntVar(&o.slotsRuns, "slots-runs", 2, "runs of each setting of figure 5, in turns")
	flag.BoolVar(&o.slotsOnly, "slots-only", false, "measure figure 5 alone")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// Interrupted, the benchmark still stops its hosts, their tmux servers and PostgreSQL before it exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	hosts, issues, followLooks int
	repos, pool                int
	work, window, poll         time.Duration
	timeout                    time.Duration
	keep                       bool
	retention, retentionDays   int
	slotsIssues, slotsHosts    int
	slotsPerHost, slotsRuns    int
	slotsKill                  time.Duration
	slotsOnly                  bool
}

func (o options) check() error {
	switch {
	case o.hosts < 2:
		return errors.New("-hosts must be at least 2 (figure 1 compares them with one host alone)")
	case o.issues < 1:
		return errors.New("-issues must be at least 1")
	case o.repos < 1 || o.pool < 0:
		return errors.New("-repos must be at least 1, -pool not negative")
	case o.work < 10*time.Second:
		return errors.New("-work must be at least 10s (figure 2 measures while every agent works)")
	case o.window < 10*time.Second:
		return errors.New("-window must be at least 10s")
	case o.retention < 0 || o.retentionDays < 1:
		return errors.New("-retention must not be negative, -retention-days at least 1")
	case o.poll < time.Second || o.followLooks < 0 || o.timeout <= 0:
		return errors.New("-poll must be at least 1s, -follow-looks not negative, -timeout positive")
	case o.slotsIssues < 0 || o.slotsHosts < 2 || o.slotsPerHost < 1 || o.slotsKill < 0 || o.slotsRuns < 1:
		return errors.New("-slots-issues must not be negative, -slots-hosts at least 2 (one is killed), -slots-per-host and -slots-runs at least 1")
	case o.slotsOnly && o.slotsIssues == 0:
		return errors.New("-slots-only measures figure 5: -slots-issues must be positive")
	}
	return nil
}

func run(ctx context.Context, o options) error {
	for _, tool := range []string{"git", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the benchmark needs %s", tool)
		}
	}
	w, err := newWorld(ctx, o)
	if err != nil {
		return err
	}
	defer w.close()
	hosts := fmt.Sprintf("%d simulated hosts (ace poll each, in this process)", o.hosts)
	if o.slotsOnly {
		hosts = fmt.Sprintf("%d hosts (ace poll processes)", o.slotsHosts)
	}
	fmt.Printf("ace fleet benchmark on %d CPUs: %s over one PostgreSQL %s\n", runtime.NumCPU(), hosts, w.pgVersion)
	if !o.slotsOnly {
		fmt.Printf("postgres durable (fsync, synchronous_commit on); monitor.interval 1s, host.dead_after 2m, poll.interval %s; "+
			"the fake agent in tmux, a fake GitHub\n", o.poll)
	}
	if !o.slotsOnly {
		if err := idlePhase(ctx, w, o); err != nil {
			return err
		}
		if err := runsPhase(ctx, w, o); err != nil {
			return err
		}
		if err := retentionPhase(ctx, w, o); err != nil {
			return err
		}
	}
	if err := slotsPhase(ctx, w, o); err != nil {
		return err
	}
	printWarnings(w)
	return nil
}
