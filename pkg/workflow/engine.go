package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// Node is one step of the graph. It may change the run's fields; the engine persists them.
type Node func(ctx context.Context, r *store.Run) (Result, error)

// Options wires an Engine to its collaborators.
type Options struct {
	Config     *config.Config
	Store      Store
	Tracker    Tracker
	Workspaces Workspaces
	Sessions   Sessions
	Secrets    Secrets
	// Memory, when set, gives every run the repository's memory and records each run's end in it.
	Memory Memory
	// ChooseAgent, when set, is agent.default = "auto": the agent a repository's eval recommends and why ("" when
	// it recommends none: agent.auto_otherwise then).
	ChooseAgent func(ctx context.Context, repo string) (agent, why string, err error)
	// Profile resolves an agent name to its profile (built-in merged with config).
	Profile func(name string) (agents.Profile, error)
	// Launcher is the argv prefix of the env-file launcher (`ace __launch`) that starts agents with secrets.
	Launcher []string
	// Supervisor is the argv prefix of the headless supervisor (`ace __headless`) that runs agents with runner exec.
	Supervisor []string
	// LiveHost is the argv prefix of the live host (`ace __live`) that holds a live run's conversation in its tmux
	// session.
	LiveHost []string
	// Boxes says whether boxes work here, shared with the workspaces (which run git on working copies in boxes
	// of their own); nil detects them for this engine alone.
	Boxes *sandbox.Detector
	// Self is ace's executable: a box's first process (`ace __box`) and, in a tmux pane, the launcher in front of
	// the box (`ace __box-launch`). Without it agents run unboxed.
	Self string
	// Root is workspace.root: logs, runtime files and homes live under it.
	Root string
	// Host names this machine among the ace hosts sharing the store (host.name; default the hostname): the runs
	// it starts hold their sessions and working copies here.
	Host     string
	Logger   *slog.Logger
	Now      func() time.Time
	Observer func(Progress)
	// IssueCheckEvery bounds how often the monitor asks the tracker whether the issue was closed or unlabelled.
	IssueCheckEvery time.Duration
	// MaxRetries bounds retries of a step that fails with a retryable error.
	MaxRetries int
}

// Engine drives runs through ace's graph.
type Engine struct {
	o     Options
	cfg   *config.Config
	log   *slog.Logger
	nodes map[Step]Node

	// The runners: each owns its mechanics (runner.go).
	tmux *tmuxRunner
	exec *execRunner
	live *liveRunner

	// The parts of the graph's work that several steps share, each in its own files.
	prompts *prompts
	humans  *humans
	limits  *usageLimits
	spend   *spending
	follow  *followThrough
	flow    *repoFlow
	memory  *memoryKeeper
	slots   *slots
	agent   *runAgent
	status  *reporter
	box     *runbox.Boxes
	alive   *liveness
	reach   *reach

	mu      sync.Mutex
	changed chan struct{} // closed at the next change of a run made by this process (see Follow)

	jobs Jobs // the job queue runs advance on (UseJobs)
	bus  bus  // run events, published in process
}

// New returns an engine. Every collaborator in o is required except Memory, Observer, Now and Logger. Its runs
// advance once a Queue is built for it (NewQueue).
func New(o Options) (*Engine, error) {
	if o.Config == nil || o.Store == nil || o.Tracker == nil || o.Workspaces == nil || o.Sessions == nil ||
		o.Secrets == nil || o.Profile == nil {
		return nil, errors.New("workflow: incomplete options")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Host == "" {
		o.Host = o.Config.Host.Name
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.IssueCheckEvery <= 0 {
		o.IssueCheckEvery = 30 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 5
	}
	e := &Engine{o: o, cfg: o.Config, log: o.Logger}
	withParts(e)
	e.nodes = map[Step]Node{
		StepClaim:        e.claim,
		StepBestOf:       e.bestOf,
		StepPrepare:      e.prepareWorkspace,
		StepWriteTask:    e.writeTask,
		StepStartSession: e.startSession,
		StepDeliver:      e.deliver,
		StepMonitor:      e.monitor,
		StepHandover:     e.handover,
		StepWaitingInput: e.waitingInput,
		StepFinalize:     e.finalize,
		StepReport:       e.report,
		StepFollowPR:     e.followPR,
		StepFailed:       e.failed,
		StepCancelled:    e.cancelled,
	}
	return e, nil
}

// withParts gives e its runners and the parts its steps share. Each part holds only what it uses: the
// configuration, the clock, the logger, the collaborators of Options it needs (as small interfaces it declares),
// the parts it calls, and of the engine's core (e) only the methods its own interface names — so a part is built
// after those it holds.
func withParts(e *Engine) *Engine {
	e.slots = &slots{core: e, store: e.o.Store, cfg: e.cfg, now: e.o.Now, log: e.log}
	e.agent = &runAgent{core: e, profiles: e.o.Profile, secrets: e.o.Secrets, tracker: e.o.Tracker, cfg: e.cfg,
		root: e.o.Root, log: e.log}
	e.box = newBoxes(e)
	e.agent.box = e.box // the box reads the agent's profile; the agent's command goes through the box
	e.prompts = &prompts{cfg: e.cfg, agent: e.agent}
	e.spend = &spending{core: e, store: e.o.Store, agent: e.agent, cfg: e.cfg, root: e.o.Root, now: e.o.Now, log: e.log}
	e.memory = &memoryKeeper{core: e, memory: e.o.Memory, secrets: e.o.Secrets, tracker: e.o.Tracker, agent: e.agent,
		cfg: e.cfg, now: e.o.Now, log: e.log}
	e.status = &reporter{core: e, tracker: e.o.Tracker, spend: e.spend, now: e.o.Now}
	e.humans = &humans{core: e, tracker: e.o.Tracker, status: e.status, cfg: e.cfg, now: e.o.Now, log: e.log}
	e.reach = &reach{core: e, status: e.status, agent: e.agent, box: e.box, cfg: e.cfg, now: e.o.Now, log: e.log}
	prs, _ := e.o.Tracker.(tracker.PRReader) // nil: no pull request is followed
	e.follow = &followThrough{core: e, tracker: e.o.Tracker, prs: prs, status: e.status,
		humans: e.humans, memory: e.memory, slots: e.slots, box: e.box, cfg: e.cfg, now: e.o.Now, log: e.log}
	mirrors, _ := e.o.Workspaces.(repoMirror) // nil: no repository workflow
	e.flow = &repoFlow{core: e, mirrors: mirrors, secrets: e.o.Secrets, tracker: e.o.Tracker, profiles: e.o.Profile,
		agent: e.agent, memory: e.memory, box: e.box, follow: e.follow, status: e.status, cfg: e.cfg, root: e.o.Root,
		now: e.o.Now, log: e.log}
	withRunners(e) // the runners, their panes, liveness and the usage limits (engine_runners.go), given the parts above
	return e
}

// Until says when a caller following a run (Follow) has seen enough.
type Until func(r *store.Run) bool

// UntilSettled follows a run until it is finished or waits for a human (an answer, or its pull request's
// reviewers and CI while it follows it).
func UntilSettled(r *store.Run) bool {
	return r.Status.Terminal() || r.Status == store.StatusWaitingInput || Step(r.Step) == StepFollowPR
}

// UntilMonitoring follows a run until its prompt is delivered (it is being monitored) or it settles.
func UntilMonitoring(r *store.Run) bool {
	return UntilSettled(r) || Step(r.Step) == StepMonitor
}

// Follow enqueues the run's job (or wakes it) and waits until until says so, the run finishes, or ctx ends. The
// run is worked by whichever ace process works this host's queue — this one when its Queue is started — and r is
// kept up to date from the store.
func (e *Engine) Follow(ctx context.Context, r *store.Run, until Until) error {
	if err := e.enqueue(ctx, r); err != nil {
		return err
	}
	for {
		changed := e.changes()
		fresh, err := e.o.Store.GetRun(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("read run %d: %w", r.ID, err)
		}
		*r = *fresh
		if r.Status.Terminal() || until(r) {
			return nil
		}
		// Changes made in this process arrive at once; those of another process at the next look.
		t := time.NewTimer(max(e.cfg.Monitor.Interval.Duration, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// changes returns a channel closed at the next change of any run made by this process.
func (e *Engine) changes() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

// signal wakes every Follow of this process: a run changed.
func (e *Engine) signal() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// Step runs the run's current node once and persists what changed. The returned error is only for failures of
// the engine itself (store unavailable, ctx cancelled); a node's own errors are handled by retry or failure.
func (e *Engine) Step(ctx context.Context, r *store.Run) (Result, error) {
	resumeWaiting(r)
	step := Step(r.Step)
	node, ok := e.nodes[step]
	if !ok {
		return Result{}, fmt.Errorf("run %d: unknown step %q (written by a newer ace?)", r.ID, step)
	}
	if res, wait, err := e.slots.gate(ctx, r); wait || err != nil { // a working run holds a slot first (slots.go)
		return res, err
	}
	before := snapshot(r)
	nctx, cancel := context.WithTimeout(ctx, stepTimeout(step))
	res, err := e.call(nctx, node, r)
	timedOut := nctx.Err() != nil
	cancel()
	if err != nil && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if err != nil && timedOut {
		err = fmt.Errorf("step %s did not finish within %s: %w", step, stepTimeout(step), err)
	}
	var ev *store.Event
	if err != nil {
		res, ev = e.onError(r, step, err)
	} else if res.Next != "" {
		r.State.Retries = 0
	}
	to := Step(r.Step)
	if res.Next != "" {
		to = res.Next
	}
	tev, err := transition(r, to, res.Status)
	if err != nil {
		// A node asked for a move the graph does not have: a bug, reported, never saved.
		return Result{}, fmt.Errorf("step %s: %w", step, err)
	}
	if ev == nil {
		ev = tev
	}
	if to != step {
		e.notify(Progress{Run: r, Kind: EventStep, Step: to})
	}
	// The run's proxy served while it is boxed, and what it saw counted; what it saw of the model goes to the reach.
	if seen, boxed := e.box.Keep(ctx, r); boxed && !r.Status.Terminal() {
		e.reach.fromBox(ctx, r, seen)
	}
	if ev != nil || !reflect.DeepEqual(before, snapshot(r)) {
		if err := e.o.Store.UpdateRun(ctx, r, ev); err != nil {
			if errors.Is(err, store.ErrConflict) {
				// Another process moved the run on; continue from what it wrote.
				fresh, gerr := e.o.Store.GetRun(ctx, r.ID)
				if gerr != nil {
					return Result{}, fmt.Errorf("reload run %d after conflict: %w", r.ID, gerr)
				}
				e.runner(r).Abandon(r, fresh)
				*r = *fresh
				return Stay(time.Second), nil
			}
			return Result{}, fmt.Errorf("save run %d: %w", r.ID, err)
		}
		e.signal()
		if r.Status.Terminal() {
			e.attemptEnded(ctx, r) // bestof_attempt.go: its best-of parent looks at once
		}
	}
	if left := e.slots.settle(ctx, r); left > 0 && res.Wait > left {
		res.Wait = left // an idle agent is kept pr.release_after at most
	}
	return res, nil
}

// call runs a node with panic recovery: a bug in one node fails that run, never the process.
func (e *Engine) call(ctx context.Context, node Node, r *store.Run) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "node panicked", "run", r.ID, "step", r.Step, "panic", p, "stack", string(debug.Stack()))
			err = Terminalf("internal error in step %s: %v", r.Step, p)
		}
	}()
	return node(ctx, r)
}

// onError turns a node's error into the run's next move: a bounded number of retries with backoff for errors that
// may pass, the failed step for the rest. Failing to report a failure is retried the same way and then given up.
func (e *Engine) onError(r *store.Run, step Step, err error) (Result, *store.Event) {
	n := r.State.Retries
	e.log.Warn("step failed", "run", r.ID, "repo", r.Repo, "issue", r.Issue, "step", step, "attempt", n+1, "err", err)
	if !IsTerminal(err) && n < e.o.MaxRetries {
		r.State.Retries = n + 1
		wait := backoff(n)
		e.notify(Progress{Run: r, Kind: EventRetry, Step: step, Message: err.Error()})
		return Stay(wait), &store.Event{Kind: "retry", Step: string(step),
			Message: fmt.Sprintf("%v (retry %d/%d in %s)", err, n+1, e.o.MaxRetries, wait)}
	}
	r.State.Retries = 0
	if step == StepFailed || step == StepCancelled {
		// Reporting the end failed for good: end the run anyway, the reason stays in the store.
		now := e.o.Now()
		r.FinishedAt = &now
		return Result{Status: endStatus(step)}, &store.Event{Kind: "error", Step: string(step), Message: "could not report: " + err.Error()}
	}
	r.Error = err.Error()
	return Goto(StepFailed), &store.Event{Kind: "error", Step: string(step), Message: err.Error()}
}

func endStatus(s Step) store.Status {
	if s == StepCancelled {
		return store.StatusCancelled
	}
	return store.StatusFailed
}

// backoff is 2s, 4s, 8s … capped at one minute.
func backoff(n int) time.Duration {
	d := 2 * time.Second << n
	if d > time.Minute || d <= 0 {
		d = time.Minute
	}
	return d
}

// event appends an event for a side effect and tells the observer.
func (e *Engine) event(ctx context.Context, r *store.Run, kind EventKind, msg string) {
	e.eventData(ctx, r, kind, msg, "")
}

// eventData records an event whose Data holds what it is about as JSON.
func (e *Engine) eventData(ctx context.Context, r *store.Run, kind EventKind, msg, data string) {
	if err := e.o.Store.AppendEvent(ctx, r.ID, store.Event{Kind: string(kind), Step: r.Step, Message: msg, Data: data}); err != nil {
		e.log.WarnContext(ctx, "record event", "run", r.ID, "kind", kind, "err", err)
	}
	e.signal()
	e.notify(Progress{Run: r, Kind: kind, Step: Step(r.Step), Message: msg})
}

func (e *Engine) notify(p Progress) {
	if p.Run != nil {
		c := *p.Run
		p.Run = &c
	}
	if e.o.Observer != nil {
		e.o.Observer(p)
	}
	e.bus.publish(p)
}

// snapshot copies the fields of a run that matter for "did anything change".
func snapshot(r *store.Run) store.Run {
	c := *r
	c.UpdatedAt = time.Time{}
	c.Version = 0
	c.Slot, c.SlotAt = "", time.Time{} // the store's slots are written apart from the run (slots.go)
	return c
}

// since is how long ago t was; a time never recorded (zero) counts as "long ago".
func (e *Engine) since(t time.Time) time.Duration { return clock(e.o.Now).since(t) }
