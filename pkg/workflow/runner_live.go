package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// The live runner (agents.X.runner = "live") holds one long-lived conversation per run over the CLI's own
// structured protocol (pkg/live: claude's stream-json control protocol, codex's app-server, gemini's ACP). The
// conversation lives in a host (`ace __live`, pkg/livehost) that runs in the run's tmux session: the pane shows
// the conversation as it goes and takes lines a human types, `ace attach` and `ace peek` work as for a tmux run,
// and the host outlives a restart of ace. ace talks to the host over its control socket (a user message, the
// answer to a permission or a question) and reads its transcript (turns ended with their usage, limits, what waits
// for an answer). A CLI whose protocol handshake fails falls back to the tmux runner.

// liveRunner drives live runs; it holds their tmux sessions with the tmux runner (panes, runner_panes.go).
type liveRunner struct {
	// Queue: text sent to a live conversation needs no keeping; Abandon: a host started by a lost visit is found
	// again by its session's name (Start re-attaches to it).
	liveKind // its name, and how a run of it is described (runner_kinds.go)
	runnerDefaults
	core     runHost // the run's events and the engine's rulings (runner.go)
	cfg      *config.Config
	now      clock
	log      *slog.Logger
	root     string   // ace's root: the live hosts' files (liveFiles)
	liveHost []string // Options.LiveHost: `ace __live`, the host in the run's tmux session

	// The parts it calls: the run's agent, the prompts it sends, the spending of each turn, the liveness and
	// reach it tells what it sees, and the tmux sessions its hosts live in (shared with the tmux runner).
	agent   *runAgent
	prompts *prompts
	spend   *spending
	alive   *liveness
	reach   *reach
	panes   *panes
}

// liveDir is where the live runs' host files are under ace's root, a directory a run (liveFilesOf); hostSocket
// is a host's control socket in it (leftovers.go finds those a killed host left).
const liveDir, hostSocket = "live", "host.sock"

// liveFiles names a live run's host files, in a directory of the run's own (a boxed host writes there and
// sees nothing else of ace's): its spec, its control socket (runbox.ShortSocket, where the root is too deep for a socket
// path) and its transcript (kept after the run, like the tmux logs).
func (l *liveRunner) liveFiles(r *store.Run) (dir, spec, socket, transcript string, err error) {
	return liveFilesOf(l.root, r)
}

// liveFilesOf is liveFiles under root.
func liveFilesOf(root string, r *store.Run) (dir, spec, socket, transcript string, err error) {
	dir = filepath.Join(root, liveDir, execName(r))
	socket, err = runbox.ShortSocket(root, filepath.Join(dir, hostSocket), fmt.Sprintf("%d-live", r.ID), hostSocket)
	return dir, filepath.Join(dir, "spec.json"), socket, filepath.Join(dir, "transcript.jsonl"), err
}

func (l *liveRunner) client(r *store.Run) *livehost.Client {
	_, _, socket, _, _ := l.liveFiles(r) // an error here was met when the host started; Dial then fails
	return livehost.Dial(socket)
}

// launch starts the live host in session name (respawn: in its dead pane), continuing the run's conversation
// when it has one (r.AgentSessionID).
func (l *liveRunner) launch(ctx context.Context, r *store.Run, name string, respawn bool) error {
	prof, err := l.agent.profile(r)
	if err != nil {
		return err
	}
	argv, err := prof.LiveArgv(l.agent.vars(r, prof))
	if err != nil {
		return Terminal(err)
	}
	if err := checkExecutable(argv[0], r.Workdir, prof); err != nil {
		return Terminal(err)
	}
	dir, specPath, socket, transcriptPath, err := l.liveFiles(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("live host's directory: %w", err)
	}
	if err := runbox.SocketDir(l.root, socket); err != nil {
		return fmt.Errorf("live host's socket: %w", err)
	}
	rw := []string{dir}
	if filepath.Dir(socket) != dir {
		rw = append(rw, filepath.Dir(socket))
	}
	host := &hosted{program: argv[0], readWrite: rw,
		inBox: []string{sandbox.SelfPath, livehost.ChildArg, specPath}}
	cmd, err := l.panes.sessionSpecOf(ctx, r, prof, name,
		append(append([]string(nil), l.liveHost...), specPath), host)
	if err != nil {
		return err
	}
	if cmd.boxed {
		argv = prof.BoxArgv(argv) // the CLI's own sandbox cannot nest in the box (codex)
	}
	spec := livehost.Spec{Agent: prof.Name, Argv: argv, Dir: r.Workdir, Resume: r.AgentSessionID,
		AutoApprove: prof.AutoApprove, Transcript: transcriptPath, Socket: socket,
		SecretNames: cmd.secrets} // the host keeps their values out of what it writes
	if err := livehost.WriteSpec(specPath, spec); err != nil {
		return fmt.Errorf("write the live host's spec: %w", err)
	}
	verb := "started a live conversation of"
	if r.AgentSessionID != "" {
		verb = "resumed the live conversation of"
	}
	return l.panes.open(ctx, r, prof, cmd.spec, respawn, verb)
}

// delivered records that the conversation has the prompt.
func (l *liveRunner) delivered(ctx context.Context, r *store.Run, how string) Result {
	r.State.PromptDelivered, r.State.Resume, r.State.DeliverSince, r.State.LivePromptAt = true, false, time.Time{}, time.Time{}
	r.State.MonitorSince = l.now()
	l.core.event(ctx, r, "prompt", how)
	return Goto(StepMonitor)
}

// restart starts the host again in the run's session, in the same conversation.
func (l *liveRunner) restart(ctx context.Context, r *store.Run) error {
	name, err := l.panes.sessionName(ctx, r)
	if err != nil {
		return err
	}
	_, found, err := l.panes.pane(ctx, name)
	if err != nil {
		return err
	}
	return l.launch(ctx, r, name, found)
}
