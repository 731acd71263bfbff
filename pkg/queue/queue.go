package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// Queue runs ace's jobs on River: each run advances as a job of its own host's queue, dispatch runs as a periodic
// job on the leader. The driver decides the database (SQLite by default, PostgreSQL for a fleet); nothing here
// depends on which.
type Queue struct {
	e      *workflow.Engine
	o      Options
	st     Store
	cfg    *config.Config
	self   string // this host's name
	now    func() time.Time
	client jobClient
	exec   riverdriver.Executor
	host   string // this host's queue

	stopping atomic.Bool
	started  atomic.Bool
	// inTouch is when this process's heartbeats began to succeed without a break (Unix nanoseconds by the engine's
	// clock); 0 from when a heartbeat, a visit or a wake found the store away until the next heartbeat is written.
	// It judges other hosts dead only while in touch (see dead).
	inTouch atomic.Int64
	// fence is this host's fence: set when it has been cut off from the store for long enough that other hosts
	// may soon move its runs (see fence.go).
	fence     fence
	startMu   sync.Mutex
	watch     *paneWatch
	stopWatch context.CancelFunc
	watchDone chan struct{}
}

// jobClient is what the Queue uses of river.Client, whatever its transaction type.
type jobClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobCancel(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
	Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func())
}

// Options configure the Queue of one ace process.
type Options struct {
	// Store is ace's store, in the database River's driver works on.
	Store Store
	// Config is ace's configuration (host.dead_after, monitor.interval, store.keep, poll).
	Config *config.Config
	// Now is the clock runs are judged by (time.Now when nil).
	Now func() time.Time
	// Workers bounds the jobs this process works at once (poll.max_concurrent; at least 2).
	Workers int
	// Dispatch makes this process start runs for labelled issues: a periodic job every Interval (the leader's),
	// and one after every run that ends. `ace poll` sets it; a foreground `ace run` does not.
	Dispatch bool
	// Interval is poll.interval: how often dispatch looks for labelled issues.
	Interval time.Duration
	// Repos lists the repositories dispatch looks at.
	Repos func(ctx context.Context) ([]string, error)
	// MaxConcurrent bounds the unfinished runs dispatch lets exist (poll.max_concurrent).
	MaxConcurrent int
	// FetchPoll is how often an idle worker looks for due jobs (default 200ms).
	FetchPoll time.Duration
	// SoftStop bounds how long Stop waits for running visits to reach a step boundary (default 10s).
	SoftStop time.Duration
	Logger   *slog.Logger
}

// visitTimeout bounds one visit of a run (several steps in a row, each bounded by stepTimeout).
const visitTimeout = 30 * time.Minute

// New builds the Queue of engine e over driver, running River's migrations first. It does not start
// working jobs: Start does. A Queue that is never started still enqueues, cancels and wakes jobs (ace stop, ace
// send): some other ace process works them.
func New[TTx any](ctx context.Context, e *workflow.Engine, driver riverdriver.Driver[TTx], o Options) (*Queue, error) {
	if o.Workers < 2 {
		o.Workers = 2
	}
	if o.FetchPoll <= 0 {
		o.FetchPoll = 200 * time.Millisecond
	}
	if o.SoftStop <= 0 {
		o.SoftStop = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Store == nil || o.Config == nil {
		return nil, errors.New("queue: incomplete options")
	}
	if err := migrateRiver(ctx, driver); err != nil {
		return nil, err
	}
	q := &Queue{e: e, o: o, st: o.Store, cfg: o.Config, self: e.Host(), now: o.Now, exec: driver.GetExecutor(),
		watch: newPaneWatch(o.Config.Monitor.Interval.Duration)}
	q.host = HostQueue(q.self)
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &runWorker{q: q}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &dispatchWorker{q: q}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &wakeWorker{q: q}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &pruneWorker{q: q}); err != nil {
		return nil, err
	}
	queues := map[string]river.QueueConfig{q.host: {MaxWorkers: o.Workers}}
	var periodic []*river.PeriodicJob
	if o.Dispatch {
		queues[dispatchQueue] = river.QueueConfig{MaxWorkers: 1}
		interval := o.Interval
		if interval <= 0 {
			interval = 2 * time.Minute
		}
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(interval),
			func() (river.JobArgs, *river.InsertOpts) { return DispatchArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "ace_dispatch"}))
		periodic = append(periodic, q.prunePeriodic()...)
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:                   clientID(q.self),
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		FetchPollInterval:    o.FetchPoll,
		FetchCooldown:        min(o.FetchPoll/2, 100*time.Millisecond),
		PollOnly:             true,
		JobTimeout:           visitTimeout,
		RescueStuckJobsAfter: visitTimeout + 5*time.Minute,
		SoftStopTimeout:      o.SoftStop,
		// River's maintenance (its leader's) deletes its own finished jobs after these (prune.go).
		CompletedJobRetentionPeriod: completedJobRetention,
		CancelledJobRetentionPeriod: failedJobRetention,
		DiscardedJobRetentionPeriod: failedJobRetention,
		Logger:                      quietRiver(o.Logger),
		ErrorHandler:                &jobErrors{log: o.Logger},
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	q.client = client
	e.UseJobs(q)
	return q, nil
}

// migrateRiver brings River's tables up to date next to ace's own, in the same database.
func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("job queue migrations: %w", err)
	}
	// Two ace processes starting on a fresh root migrate at once: the loser of the race finds the tables there.
	for attempt := 0; ; attempt++ {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		if err == nil || attempt == 5 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("job queue migrations: %w", err)
	}
	return nil
}

// HostQueue is the River queue of a host's runs.
func HostQueue(host string) string {
	var b strings.Builder
	b.WriteString("host_")
	sep := false
	for _, c := range strings.ToLower(host) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			if sep && b.Len() > len("host_") {
				b.WriteByte('_')
			}
			b.WriteRune(c)
			sep = false
		} else {
			sep = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	if b.Len() == len("host_") {
		b.WriteString("local")
	}
	return b.String()
}

// clientID names this process among River's clients: "<host>:<pid>:<start>". With it a restarted ace finds the
// jobs a dead process of this host was working (and frees them at once, instead of after River's rescue delay).
func clientID(host string) string {
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), processStart(os.Getpid()))
}

// Start makes this process work its host's jobs (and dispatch, when so configured). Jobs that a dead ace process
// of this host left running are freed first.
func (q *Queue) Start(ctx context.Context) error {
	q.startMu.Lock()
	defer q.startMu.Unlock()
	if q.started.Load() {
		return nil
	}
	if err := q.rescueDead(ctx); err != nil {
		q.o.Logger.WarnContext(ctx, "free the jobs of dead ace processes", "err", err)
	}
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start the job queue: %w", err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q.stopWatch, q.watchDone = cancel, make(chan struct{})
	q.inTouch.Store(0) // until the first heartbeat is written
	go func() {
		defer close(q.watchDone)
		go q.heartbeats(wctx)
		q.runPaneWatch(wctx)
	}()
	q.started.Store(true)
	q.stopping.Store(false)
	return nil
}

// Stop takes no new work, lets running visits reach a step boundary (bounded by SoftStop), and returns. Agents
// keep running; their jobs wait in the queue for the next ace.
//
// While the store does not answer, Stop waits storeAwayStop at most: nothing River would write on its way out
// (the visits' snoozes, its leadership given up) can be written, and its retries take 10 s and more to give up.
// The jobs this process leaves running are freed by the next ace of this host, or move with their runs to
// another host after host.dead_after.
func (q *Queue) Stop(ctx context.Context) error {
	q.startMu.Lock()
	defer q.startMu.Unlock()
	if !q.started.Load() {
		return nil
	}
	q.stopping.Store(true)
	sctx, cancel := ctx, context.CancelFunc(func() {})
	away := q.inTouch.Load() == 0
	if away {
		sctx, cancel = context.WithTimeout(ctx, storeAwayStop)
	}
	err := q.client.Stop(sctx)
	cancel()
	if away && err != nil && ctx.Err() == nil {
		q.o.Logger.WarnContext(ctx, "stopped without waiting for the store, which does not answer", "err", err)
		err = nil
	}
	q.stopWatch()
	<-q.watchDone
	q.started.Store(false)
	return err
}

// storeAwayStop bounds Stop while the store does not answer.
const storeAwayStop = 3 * time.Second

// Visits reports each visit of a job this process finishes (benchmarks and tests count them). Call the returned
// function to stop.
func (q *Queue) Visits() (<-chan *river.Event, func()) {
	return q.client.Subscribe(river.EventKindJobSnoozed, river.EventKindJobCompleted, river.EventKindJobFailed)
}

// Enqueue makes sure the run's job exists (one per run) and is due now.
func (q *Queue) Enqueue(ctx context.Context, r *store.Run) error {
	res, err := q.client.Insert(ctx, RunArgs{Repo: r.Repo, Issue: r.Issue, Run: r.ID}, &river.InsertOpts{Queue: q.queueOf(r)})
	if err != nil {
		return fmt.Errorf("enqueue %s#%d: %w", r.Repo, r.Issue, err)
	}
	if res.UniqueSkippedAsDuplicate {
		return q.wake(ctx, res.Job, r)
	}
	return nil
}

// queueOf is the queue of the host that holds the run.
func (q *Queue) queueOf(r *store.Run) string {
	if r.Host == "" {
		return q.host
	}
	return HostQueue(r.Host)
}

// Wake makes the job of the issue's latest unfinished run due now: something changed that the run should look at
// (a human's answer sent with ace send, a webhook).
func (q *Queue) Wake(ctx context.Context, repo string, issue int) error {
	r, err := q.st.LatestRun(ctx, repo, issue)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Status.Terminal() {
		return nil
	}
	return q.Enqueue(ctx, r)
}

// wake makes the run's existing job due now. A job that runs is woken once its visit ends (wake.go): the
// visit may have read the run before what changed.
func (q *Queue) wake(ctx context.Context, job *rivertype.JobRow, r *store.Run) error {
	if job == nil || job.State == rivertype.JobStateAvailable {
		return nil
	}
	if job.State == rivertype.JobStateRunning {
		return q.wakeLater(ctx, job, WakeArgs{Repo: r.Repo, Issue: r.Issue})
	}
	if _, err := q.client.JobRetry(ctx, job.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("wake job %d: %w", job.ID, err)
	}
	return nil
}

// Dispatch makes a dispatch pass due now (a webhook, a run that ended and freed a slot). A pass that runs already
// may have listed the issues before what changed: another one follows it (wake.go).
func (q *Queue) Dispatch(ctx context.Context) error {
	if !q.o.Dispatch {
		return nil
	}
	res, err := q.client.Insert(ctx, DispatchArgs{}, nil)
	if err != nil {
		return fmt.Errorf("enqueue dispatch: %w", err)
	}
	if res.UniqueSkippedAsDuplicate && res.Job != nil && res.Job.State == rivertype.JobStateRunning {
		return q.wakeLater(ctx, res.Job, WakeArgs{Dispatch: true})
	}
	return nil
}

// Interrupt cancels the run job of an issue while it works (ace stop interrupts a long step); the caller
// enqueues it again to run the cancelled step.
func (q *Queue) Interrupt(ctx context.Context, repo string, issue int) error {
	jobs, err := q.runJobs(ctx, repo, issue, rivertype.JobStateRunning)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if _, err := q.client.JobCancel(ctx, j.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("cancel job %d: %w", j.ID, err)
		}
	}
	// The worker notices the cancellation within a moment (River tells its producers) and ends the visit; only
	// then can the run's next job be enqueued.
	deadline := time.Now().Add(max(q.o.SoftStop, 5*time.Second))
	for time.Now().Before(deadline) {
		left, err := q.runJobs(ctx, repo, issue, rivertype.JobStateRunning)
		if err != nil || len(left) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the job of %s#%d did not stop within %s", repo, issue, max(q.o.SoftStop, 5*time.Second))
}

// runJobs lists the run jobs of an issue in the given states.
func (q *Queue) runJobs(ctx context.Context, repo string, issue int, states ...rivertype.JobState) ([]*rivertype.JobRow, error) {
	params := river.NewJobListParams().Kinds(RunArgs{}.Kind()).States(states...).First(1000)
	res, err := q.client.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []*rivertype.JobRow
	for _, j := range res.Jobs {
		if a, ok := decodeRunArgs(j); ok && a.Repo == repo && a.Issue == issue {
			out = append(out, j)
		}
	}
	return out, nil
}

// advance is one visit of a run: its steps are worked until one asks to wait, and the job snoozes that long. A
// visit that sees the process stopping hands the run back at the next step boundary.
func (q *Queue) advance(ctx context.Context, jobID int64, a RunArgs) error {
	return q.whenAway(ctx, q.visit(ctx, jobID, a))
}

// storeAwayRetry is how long a job waits to try again when the store did not answer (plus up to as much again
// at random, so that the jobs of a fleet do not all come back at the same instant).
const storeAwayRetry = 2 * time.Second

// whenAway turns the error of a store that went away (PostgreSQL restarting, failing over) into a short snooze:
// the visit is made again once the store is back — steps are idempotent — and does not count as a failure of the
// job, whose River backoff grows with every failure it ever had (1s, 16s, 81s, 4 min …) and which is discarded
// after its last attempt.
func (q *Queue) whenAway(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || !store.Unavailable(err) {
		return err
	}
	q.inTouch.Store(0) // until the next heartbeat is written
	return river.JobSnooze(storeAwayRetry + rand.N(storeAwayRetry))
}

func (q *Queue) visit(ctx context.Context, jobID int64, a RunArgs) error {
	r, err := q.st.GetRun(ctx, a.Run)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted
	}
	if err != nil {
		return err
	}
	if r.Host != "" && r.Host != q.self {
		return nil // the run moved to another host while this one was away: its job there works it
	}
	if r.Host == "" {
		r.Host = q.self // a run from before hosts were recorded is this host's: its job is in this queue
	}
	for {
		if r.Status.Terminal() {
			q.ended(ctx)
			return nil
		}
		if q.stopping.Load() {
			return river.JobSnooze(0)
		}
		if q.fence.up.Load() {
			return river.JobSnooze(fencedSnooze) // cut off from the store: no step until it answers again
		}
		res, err := q.e.Step(ctx, r)
		q.fence.visited(r)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			q.ended(ctx)
			return nil
		}
		if res.Wait > 0 {
			return river.JobSnooze(q.hold(jobID, r, res.Wait))
		}
	}
}

// ended frees the slot of a run that finished: the next labelled issue starts now, not at the next poll.
func (q *Queue) ended(ctx context.Context) {
	if err := q.Dispatch(ctx); err != nil {
		q.o.Logger.WarnContext(ctx, "enqueue dispatch", "err", err)
	}
}

// dispatchPass starts runs for labelled issues and makes sure every unfinished run of this host has its job (a
// run created by a process that died before it enqueued the job, or whose job was discarded). A pass the store
// did not answer is made again shortly.
func (q *Queue) dispatchPass(ctx context.Context) error {
	return q.whenAway(ctx, q.dispatchOnce(ctx))
}

func (q *Queue) dispatchOnce(ctx context.Context) error {
	if err := q.rescueDead(ctx); err != nil {
		q.o.Logger.WarnContext(ctx, "free the jobs of dead ace processes", "err", err)
	}
	if err := q.moveRunsOfDeadHosts(ctx); err != nil {
		q.o.Logger.WarnContext(ctx, "move the runs of dead hosts", "err", err)
	}
	runs, err := q.st.ListRuns(ctx, store.Filter{Statuses: unfinished})
	if err != nil {
		return fmt.Errorf("list unfinished runs: %w", err)
	}
	for _, r := range runs {
		if _, err := q.client.Insert(ctx, RunArgs{Repo: r.Repo, Issue: r.Issue, Run: r.ID}, &river.InsertOpts{Queue: q.queueOf(r)}); err != nil {
			return fmt.Errorf("enqueue %s#%d: %w", r.Repo, r.Issue, err)
		}
	}
	if err := q.wakeWaiting(ctx, runs); err != nil {
		return err
	}
	if q.o.Repos == nil {
		return nil
	}
	repos, err := q.o.Repos(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	var rep workflow.PollReport
	if err := q.DispatchRepos(ctx, repos, q.o.MaxConcurrent, &rep); err != nil {
		return err
	}
	for _, err := range rep.Errors {
		q.o.Logger.WarnContext(ctx, "dispatch", "err", err)
	}
	q.o.Logger.InfoContext(ctx, "dispatch pass", "repos", len(repos), "started", rep.Started, "queued", rep.Queued, "skipped", rep.Skipped,
		"untrusted", rep.Untrusted, "errors", len(rep.Errors), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// wakeWaiting wakes the runs waiting for a slot that one is free for now, or an idle agent can give way to — on
// each host, the longest waiting first, as many as its working runs leave room for: a slot freed (a run ended,
// or went to wait for its pull request or a human) goes to them within this pass.
func (q *Queue) wakeWaiting(ctx context.Context, runs []*store.Run) error {
	hosts, err := q.st.Hosts(ctx)
	if err != nil {
		return err
	}
	capacity := map[string]int{q.self: q.o.MaxConcurrent}
	for _, h := range hosts {
		if h.Name != q.self {
			capacity[h.Name] = h.MaxConcurrent
		}
	}
	work := map[string]int{}
	waiting := map[string][]*store.Run{}
	for _, r := range runs {
		switch r.Slot {
		case store.SlotWork:
			work[r.Host]++
		case store.SlotWait:
			waiting[r.Host] = append(waiting[r.Host], r)
		}
	}
	for host, ws := range waiting {
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].SlotAt.Before(ws[j].SlotAt) })
		room := len(ws)
		if c, ok := capacity[host]; ok && c > 0 {
			room = c - work[host]
		}
		for _, r := range ws[:max(0, min(room, len(ws)))] {
			if err := q.Enqueue(ctx, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// DispatchRepos starts runs for the labelled issues of repos (one dispatch pass, workflow.Engine.DispatchRepos),
// each on the live host with the most free slots.
func (q *Queue) DispatchRepos(ctx context.Context, repos []string, maxConcurrent int, rep *workflow.PollReport) error {
	return q.e.DispatchRepos(ctx, repos, maxConcurrent, q.pickHost, rep)
}

// Fenced reports whether this host is cut off from the store for long enough that another may take its runs: it
// takes no step and pushes nothing until the store answers (fence.go).
func (q *Queue) Fenced() bool { return q.fence.up.Load() }

// Store is what the queue reads and writes of ace's store.
type Store interface {
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	LatestRun(ctx context.Context, repo string, issue int) (*store.Run, error)
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
	Hosts(ctx context.Context) ([]store.Host, error)
	Slots(ctx context.Context) (map[string]store.SlotCounts, error)
	Heartbeat(ctx context.Context, h store.Host) error
	Prune(ctx context.Context, cutoff time.Time) (int, error)
}
