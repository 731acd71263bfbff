package agentcheck

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/local"
	"github.com/aceworks/ace/pkg/workflow"
)

// The phases of a check: each runs in a process (and namespace) of its own, on a world of its own.
const (
	PhaseRun   = "run"   // from the issue to a pull request, with a question on the way
	PhaseLimit = "limit" // the model answers with the provider's usage-limit error
	PhaseLive  = "live"  // the run phase again, over the CLI's live protocol (runner "live")
	// PhaseGateway is the run phase again behind a gateway that passes the conversation and not the CLI's side
	// requests, with the CLI set up as its users behind one set it up: the dialogs that appear only there (claude
	// 2.1.332's "Auto mode can't check actions in this session") are met as a user meets them.
	PhaseGateway = "gateway"
)

// The model's script and what the check looks for.
const (
	approvalMark = "ace-check-approval-42"
	question     = "Should the greeting be formal or casual?"
	commitMsg    = "Add GREETING.md"
	// answer is the human's answer on the issue, in free text.
	answer = "Formal, please: \"Good day.\" — and keep $HOME as it is."
)

// phase is one phase's settings, as the child process got them.
type phase struct {
	agent, name, dir, configPath, exe, network string
	startup, timeout                           time.Duration
}

// script is the model's part: read the task with the CLI's file tool, run a shell command (a tool the CLI asks
// permission for), ask a question (the CLI's own question tool where it has one, else ace's .ace/QUESTION),
// write and commit the work, and follow ace's done protocol.
func script(prof agents.Profile) []modelserver.Turn {
	turns := []modelserver.Turn{
		modelserver.ReadFile("ACE_TASK.md"),
		// A command that writes, so that the CLI asks permission for it; its output differs from its text, so
		// seeing it proves the command ran (no $(…): gemini refuses command substitution).
		modelserver.Shell("printf 'ace-check-%s\\n' approval-42 > .ace/approval.txt && cat .ace/approval.txt"),
	}
	if prof.QuestionTool != "" {
		turns = append(turns, modelserver.Ask(question, "Formal", "Casual"))
	} else {
		turns = append(turns, modelserver.WriteFile(".ace/QUESTION", question+"\n"),
			modelserver.Text("I wrote my question to .ace/QUESTION and wait for the answer."))
	}
	return append(turns,
		modelserver.WriteFile("GREETING.md", "Good day.\n"),
		modelserver.Shell(fmt.Sprintf("git add GREETING.md && git commit -q -m %q", commitMsg)),
		modelserver.WriteFile(".ace/DONE", "Added GREETING.md.\n"),
	)
}

// run performs the phase and reports what held. It never returns without a report: what went wrong before the
// steps could be judged is the report's Error.
func (p phase) run(ctx context.Context) (rep Report) {
	start := time.Now()
	rep = Report{Agent: p.agent, Phase: p.name, Network: p.network, At: start.UTC(), Dir: p.dir}
	defer func() { rep.Took = time.Since(start).Round(time.Millisecond) }()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	user := config.Default()
	if p.configPath != "" {
		var err error
		if user, _, err = config.Load(p.configPath, os.Getenv); err != nil {
			rep.Error = err.Error()
			return rep
		}
	}
	prof, err := service.Profile(user, p.agent)
	if err == nil {
		err = Checkable(prof)
	}
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	in, err := prof.CheckInstalled(ctx)
	if in.Path == "" {
		rep.Error = err.Error()
		return rep
	}
	rep.Version, rep.Tested = in.Version, in.Tested.String()
	if in.Version != "" && in.Tested.Oldest != "" {
		rep.Place = in.Tested.Place(in.Version)
	}
	w, err := newWorld(ctx, p.dir)
	if err != nil {
		rep.Error = fmt.Sprintf("set up the throwaway repository: %v", err)
		return rep
	}
	srv, err := modelserver.New(modelserver.Scenario{Dir: worktree(w.root), Turns: script(prof), Final: "All done.",
		Gateway: p.name == PhaseGateway})
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	defer srv.Close()
	client, err := w.enterHome(prof.Adapter().CLI, srv.URL(), p.name == PhaseLimit)
	if err != nil {
		rep.Error = fmt.Sprintf("prepare a fresh home: %v", err)
		return rep
	}
	runner := store.RunnerTmux
	if p.name == PhaseLive {
		runner = store.RunnerLive
	}
	cfg, err := w.config(user, p.agent, runner, p.startup)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	if p.name == PhaseGateway {
		gatewayUser(cfg, p.agent, client)
	}
	d, err := p.open(ctx, w, cfg, srv)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	defer d.close()
	defer d.writeModelLog()
	switch p.name {
	case PhaseLimit:
		rep.Steps = d.limit(ctx)
	case PhaseLive:
		rep.Steps = []Step{sumUp(StepLive, fmt.Sprintf("over the CLI's live protocol (runner %q)", store.RunnerLive), d.issueToPR(ctx, prof))}
	case PhaseGateway:
		rep.Steps = []Step{sumUp(StepGateway, "behind a gateway that does not pass the CLI's side requests", d.issueToPR(ctx, prof))}
	default:
		rep.Steps = d.issueToPR(ctx, prof)
	}
	return rep
}

// driver is ace assembled on the phase's world, with the model server it talks to.
type driver struct {
	w   *world
	svc *service.Service
	srv *modelserver.Server
	lt  *local.Tracker
	run *store.Run
	log *os.File
}

func (p phase) open(ctx context.Context, w *world, cfg *config.Config, srv *modelserver.Server) (*driver, error) {
	logf, err := os.Create(filepath.Join(w.dir, "ace.log"))
	if err != nil {
		return nil, err
	}
	lt, err := local.New(w.tracker)
	if err != nil {
		logf.Close()
		return nil, err
	}
	svc, err := service.Open(ctx, service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: os.LookupEnv}),
		Logger:     slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Executable: p.exe,
		Tune:       func(o *workflow.Options) { o.IssueCheckEvery = time.Second },
	})
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("open ace on the throwaway repository: %w", err)
	}
	d := &driver{w: w, svc: svc, srv: srv, lt: lt, log: logf}
	if err := svc.StartQueue(ctx); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close stops the run's agent and ace's tmux server (by its PID: every process it started ends with it).
func (d *driver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if d.run != nil && !d.run.Status.Terminal() {
		_ = d.svc.Engine.Stop(ctx, d.run, "ace agents check is done")
	}
	_ = d.svc.Queue.Stop(ctx)
	_ = d.svc.Tmux.KillServer(ctx)
	_ = d.svc.Close()
	_ = d.log.Close()
}

// drive follows the run until stop or the phase's deadline; it returns false when the deadline came first.
func (d *driver) drive(ctx context.Context, stop workflow.Until) bool {
	if d.run == nil {
		r, err := d.svc.Engine.Open(ctx, workflow.Request{Repo: repoName, Issue: issue})
		if err != nil {
			return false
		}
		d.run = r
	}
	return d.svc.Engine.Follow(ctx, d.run, stop) == nil
}

// events are the run's events, kind by kind.
func (d *driver) events() map[string][]string {
	out := map[string][]string{}
	if d.run == nil {
		return out
	}
	evs, err := d.svc.Store.Events(context.Background(), d.run.ID)
	if err != nil {
		return out
	}
	for _, e := range evs {
		out[e.Kind] = append(out[e.Kind], e.Message)
	}
	return out
}

// saveScreen writes the agent's screen (live, or the last one ace kept) for the failed step and returns its path.
func (d *driver) saveScreen(step string) string {
	if d.run == nil {
		return ""
	}
	screen := d.run.State.LastScreen
	if d.run.Session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if s, err := d.svc.Tmux.Capture(ctx, d.run.Session, 0); err == nil && strings.TrimSpace(s) != "" {
			screen = s
		}
		cancel()
	}
	if strings.TrimSpace(screen) == "" {
		return ""
	}
	path := filepath.Join(d.w.screens, step+".txt")
	if err := os.WriteFile(path, []byte(screen), 0o600); err != nil {
		return ""
	}
	return path
}

// where says where the run stands, for a step that failed.
func (d *driver) where() string {
	if d.run == nil {
		return "the run did not start"
	}
	s := fmt.Sprintf("the run is %s at %s", d.run.Status, d.run.Step)
	if d.run.Error != "" {
		s += ": " + d.run.Error
	}
	if d.run.Status == store.StatusWaitingInput && d.run.State.Question != "" {
		s += "; it asks a human: " + firstLine(d.run.State.Question)
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// verdict is the evidence for one step; steps turns them into steps: the first step without its evidence fails
// with the run's state and the screen, a later one without its evidence was not reached.
type verdict struct {
	name   string
	ok     bool
	detail string
}

func (d *driver) steps(vs []verdict) []Step {
	out := make([]Step, 0, len(vs))
	failed := false
	for _, v := range vs {
		s := Step{Name: v.name, OK: v.ok, Detail: v.detail}
		switch {
		case v.ok:
		case !failed:
			failed = true
			s.Detail = strings.TrimSpace(v.detail + " (" + d.where() + ")")
			s.Screen = d.saveScreen(v.name)
		default:
			s.Detail = "not reached"
		}
		out = append(out, s)
	}
	return out
}

// answered reports whether the human's answer reached the model: the option the menu's free-text entry sent
// as the question tool's result, or a user message.
func (d *driver) answered(prof agents.Profile) bool {
	if prof.QuestionTool != "" {
		return d.srv.SawToolOutput(answer)
	}
	return d.srv.SawUserText(answer)
}

// writeModelLog keeps what the model was asked and answered, request by request, beside ace's log: what a
// failed step's reader needs to see what the CLI sent.
func (d *driver) writeModelLog() {
	var b strings.Builder
	for _, q := range d.srv.Requests() {
		fmt.Fprintf(&b, "%s %s status=%d side=%v turn=%d final=%v tools=%d\n", q.Method, q.Path, q.Status, q.Side, q.Turn, q.Final, len(q.Tools))
		for _, t := range q.UserTexts {
			fmt.Fprintf(&b, "  user: %q\n", clip(t, 300))
		}
		for _, t := range q.ToolOutputs {
			fmt.Fprintf(&b, "  tool: %q\n", clip(t, 300))
		}
	}
	_ = os.WriteFile(filepath.Join(d.w.dir, "model.log"), []byte(b.String()), 0o600)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sumUp is the run phase's steps taken again somewhere else (name: over the live protocol, behind a gateway) as
// one step: one line, naming what did not hold.
func sumUp(name, where string, steps []Step) Step {
	var failed, dialogs []string
	screen := ""
	for _, s := range steps {
		if !s.OK {
			failed = append(failed, s.Name+" ("+s.Detail+")")
			if screen == "" {
				screen = s.Screen // the first that failed shows why
			}
		}
		if s.Name == StepStart && s.OK {
			dialogs = append(dialogs, s.Detail)
		}
	}
	if len(failed) > 0 {
		return Step{Name: name, Detail: where + ", these did not hold: " + strings.Join(failed, "; "), Screen: screen}
	}
	return Step{Name: name, OK: true, Detail: "issue to pull request " + where + ": " + strings.Join(dialogs, "") +
		"; task, approval, question and answer, commit, usage"}
}

// gatewayUser sets agent up as its users behind a gateway do (modelserver.Client.Gateway), in the agent's own
// environment, which is what reaches a boxed CLI.
func gatewayUser(cfg *config.Config, agent string, client modelserver.Client) {
	a := cfg.Agents[agent]
	a.Env = maps.Clone(a.Env)
	if a.Env == nil {
		a.Env = map[string]string{}
	}
	for _, kv := range client.Gateway {
		k, v, _ := strings.Cut(kv, "=")
		a.Env[k] = v
	}
	cfg.Agents[agent] = a
}
