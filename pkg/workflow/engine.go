package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
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

	// The runners: each owns its mechanics (runner.go); runners has them by name (Engine.runner).
	tmux    *tmuxRunner
	exec    *execRunner
	live    *liveRunner
	runners map[string]Runner

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
		StepAsk:          e.ask,
		StepTell:         e.tell,
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

// event appends an event for a side effect and tells the observer.
func (e *Engine) event(ctx context.Context, r *store.Run, kind EventKind, msg string) {
	e.eventData(ctx, r, kind, msg, "")
}

// eventData records an event whose Data holds what it is about as JSON.
func (e *Engine) eventData(ctx context.Context, r *store.Run, kind EventKind, msg, data string) {
	// Events are what a run did, kept without secrets: in the log too, beside what ace did around them.
	if e.log != nil { // a test's engine may have none
		e.log.DebugContext(ctx, "event", "run", r.ID, "kind", kind, "step", r.Step, "msg", msg)
	}
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

// since is how long ago t was; a time never recorded (zero) counts as "long ago".
func (e *Engine) since(t time.Time) time.Duration { return clock(e.o.Now).since(t) }

// UseJobs makes the runs of e advance as jobs of j.
func (e *Engine) UseJobs(j Jobs) { e.jobs = j }

// enqueue makes the run's job due now.
func (e *Engine) enqueue(ctx context.Context, r *store.Run) error {
	if e.jobs == nil {
		return errNoJobs
	}
	return e.jobs.Enqueue(ctx, r)
}

// dispatch makes a dispatch pass due now (a slot for work was freed), when runs advance on a queue.
func (e *Engine) dispatch(ctx context.Context) error {
	if e.jobs == nil {
		return nil
	}
	return e.jobs.Dispatch(ctx)
}

// StopAgent ends the run's agent, if it is still there, keeping its working copy and conversation (a fenced
// host stops its agents before another host may take its runs).
func (e *Engine) StopAgent(ctx context.Context, r *store.Run) error { return e.runner(r).Stop(ctx, r) }

// Host is the name of the host this engine's runs live on.
func (e *Engine) Host() string { return e.o.Host }

// StartProxies serves the proxies of this host's unfinished boxed runs: called when this process starts working
// the host's runs, so that a box that outlived the last ace reaches the network again before its run's next step.
func (e *Engine) StartProxies(ctx context.Context) error {
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Host: e.o.Host, Statuses: []store.Status{store.StatusActive,
		store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return fmt.Errorf("list the host's runs: %w", err)
	}
	var errs []error
	for _, r := range runs {
		if err := e.box.Ensure(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close ends what the engine serves in this process: the boxes' proxies.
func (e *Engine) Close() { e.box.Close() }

// newBoxes are the boxes of e's runs: e's configuration and root, its events, its tracker's endpoints, its
// workspaces' mirror objects, its agents.
func newBoxes(e *Engine) *runbox.Boxes {
	mirrors, _ := e.o.Workspaces.(runbox.Mirrors)
	return runbox.New(runbox.Options{
		Config: e.cfg, Root: e.o.Root, Self: e.o.Self, Detector: e.o.Boxes,
		Events: func(ctx context.Context, r *store.Run, kind, msg string) { e.event(ctx, r, EventKind(kind), msg) },
		Store:  e.o.Store, Tracker: e.o.Tracker, Mirrors: mirrors, Profile: e.agent.profile, Logger: e.log,
	})
}

// errNoChange tells updateFresh that the fresh run needs no change.
var errNoChange = errors.New("no change")

// updateFresh applies change to r and saves it. The run may be driven by another process at the same time (ace
// poll, while ace send, ace nudge or ace stop write it): a write that conflicts is redone on the fresh run.
func (e *Engine) updateFresh(ctx context.Context, r *store.Run, change func(*store.Run) (*store.Event, error)) error {
	for attempt := 0; ; attempt++ {
		ev, err := change(r)
		if err != nil {
			return err
		}
		err = e.o.Store.UpdateRun(ctx, r, ev)
		if !errors.Is(err, store.ErrConflict) || attempt == 5 {
			return err
		}
		fresh, gerr := e.o.Store.GetRun(ctx, r.ID)
		if gerr != nil {
			return fmt.Errorf("reload run %d: %w", r.ID, gerr)
		}
		*r = *fresh
	}
}

// wake makes the run's job look at the run now (it changed outside a visit: ace send, ace nudge).
func (e *Engine) wake(ctx context.Context, r *store.Run) {
	e.signal()
	if e.jobs == nil {
		return
	}
	if err := e.jobs.Enqueue(ctx, r); err != nil {
		e.log.WarnContext(ctx, "wake the run's job", "run", r.ID, "err", err)
	}
}

// runner is the run's runner, working for e: the one of the run's kind (runner_kinds.go).
func (e *Engine) runner(r *store.Run) Runner { return e.runners[Describe(r).Name()] }
