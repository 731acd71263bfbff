package workflow

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// The sandbox ([sandbox], package sandbox): each agent process a runner starts runs in a box of its own, which
// sees the run's working copy and a home of its own for the run, and reaches the network only through an egress
// proxy that the ace process working the run serves (box_proxy.go). A runner asks for a plan before it prepares
// the agent's environment (a boxed agent's home is the run's, not the user's) and wraps the command once it has
// it (box_spec.go says what the box sees).

// sandboxes is the engine's part that puts agents in boxes and keeps their proxies.
type sandboxes struct {
	e *Engine

	detectMu   sync.Mutex
	host       *sandbox.Host
	hostErr    error
	detectedAt time.Time

	mu      sync.Mutex
	proxies map[int64]*runProxy
	closed  bool
}

// redetectAfter is how long a failed detection stands before boxes are tried again (bubblewrap installed
// meanwhile, say); a host that works is detected once.
const redetectAfter = time.Minute

// boxPlan is a boxed launch in the making: the host's bubblewrap, the run's sandbox configuration and where the
// run's box keeps its home and its proxy's socket.
type boxPlan struct {
	host *sandbox.Host
	cfg  config.SandboxConfig
	home string
	sock string
}

// plan decides whether r's agent runs boxed: a plan, or nil for the host — mode "off", or mode "auto" where
// boxes do not work here, which a warning event says once per run, with what to install. Under mode "on" a box
// that cannot be built fails the run, naming what to install.
func (sb *sandboxes) plan(ctx context.Context, r *store.Run, prof agents.Profile) (*boxPlan, error) {
	e := sb.e
	cfg := e.cfg.SandboxFor(prof.Name, r.Repo)
	if cfg.Mode == config.SandboxOff {
		if r.State.Box != nil {
			r.State.Box.Proxy = ""
		}
		return nil, nil
	}
	h, err := sb.detect(ctx)
	if err == nil && e.o.Self == "" {
		err = errors.New("ace's executable is unknown (workflow.Options.Self), so no box can start it")
	}
	if err != nil {
		if cfg.Mode == config.SandboxOn {
			return nil, Terminal(fmt.Errorf("sandbox mode %q for agent %s: %w", cfg.Mode, prof.Name, err))
		}
		box := sb.state(r)
		box.Proxy = ""
		if box.Unboxed == "" {
			box.Unboxed = err.Error()
			e.event(ctx, r, EventSandbox, fmt.Sprintf("%s runs unboxed, as you, with your files and network: %v "+
				"(sandbox mode \"auto\"; \"on\" makes this an error, \"off\" runs agents unboxed without a word)", prof.Name, err))
		}
		return nil, nil
	}
	sock, err := sb.socketPath(r.ID)
	if err != nil {
		return nil, err
	}
	return &boxPlan{host: h, cfg: cfg, home: filepath.Join(sb.runDir(r.ID), "homes", prof.Name), sock: sock}, nil
}

// maxSocketPath is the longest path a unix socket may have here (sun_path is 108 bytes, its NUL included).
const maxSocketPath = 107

// socketPath is where the run's proxy listens: <root>/boxes/<run>/egress/egress.sock, alone in its directory
// (the box sees the directory). A root too deep for a socket's path gets a directory of the user's own under the
// first of $XDG_RUNTIME_DIR, the temporary directory and /tmp short enough, named after the root, so that a
// restarted ace finds the same path.
func (sb *sandboxes) socketPath(id int64) (string, error) {
	p := filepath.Join(sb.runDir(id), "egress", "egress.sock")
	if len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(sb.e.o.Root))
	name := fmt.Sprintf("ace-%d-%x", os.Getuid(), sum[:6])
	for _, base := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp"} {
		if !filepath.IsAbs(base) {
			continue
		}
		dir := filepath.Join(base, name)
		if p := filepath.Join(dir, strconv.FormatInt(id, 10), "egress.sock"); len(p) <= maxSocketPath {
			return p, privateDir(dir)
		}
	}
	return "", fmt.Errorf("no socket path short enough for the box's proxy (ace's root %s is too deep)", sb.e.o.Root)
}

// privateDir makes dir, or checks that it is this user's private directory: another user could have made it
// first, to listen in the proxy's place.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("the box's socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the box's socket directory: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("the box's socket directory %s is not this user's private directory", dir)
	}
	return nil
}

// wrap puts argv in the plan's box and starts the run's proxy: the box's environment is le's plain variables
// with what a box adds (box_spec.go), never its secrets, which the runner hands on as it does unboxed; terminal
// keeps the tmux pane's terminal.
func (sb *sandboxes) wrap(ctx context.Context, r *store.Run, prof agents.Profile, p *boxPlan, argv []string, le launchEnv, terminal bool) (*sandbox.Box, error) {
	e := sb.e
	box := sb.state(r)
	fresh := box.Proxy == ""
	box.Home, box.Proxy, box.Unboxed = p.home, p.sock, ""
	if err := sb.ensure(ctx, r); err != nil {
		return nil, err
	}
	env := boxEnv(prof, le.env, r.Workdir)
	spec := sandbox.Spec{
		WorkDir: r.Workdir, Home: p.home, Env: env, ProxySocket: p.sock, Forward: p.cfg.Forward, Terminal: terminal,
		Self: e.o.Self, ReadOnly: sb.readOnly(r, prof, p.cfg, argv[0], env["PATH"]), ReadWrite: le.logins, Hide: sb.hidden(),
	}
	e.log.DebugContext(ctx, "box", "run", r.ID, "read_only", spec.ReadOnly, "read_write", spec.ReadWrite, "forward", spec.Forward)
	b, err := p.host.Wrap(spec, argv)
	if err != nil {
		return nil, fmt.Errorf("put %s in its box: %w", prof.Name, err)
	}
	if fresh {
		e.event(ctx, r, EventSandbox, fmt.Sprintf("%s runs boxed: it sees its working copy and its home for this run (%s), "+
			"not your home or ace's; its network goes through ace's proxy (%d destinations allowed)",
			prof.Name, p.home, len(sb.allow(r, prof, p.cfg))))
	}
	return b, nil
}

// detect finds out, once per process (again a minute after a failure), whether boxes work here.
func (sb *sandboxes) detect(ctx context.Context) (*sandbox.Host, error) {
	sb.detectMu.Lock()
	defer sb.detectMu.Unlock()
	if sb.host == nil && (sb.hostErr == nil || time.Since(sb.detectedAt) > redetectAfter) {
		sb.host, sb.hostErr = sandbox.Detect(ctx)
		sb.detectedAt = time.Now()
	}
	return sb.host, sb.hostErr
}

// state is the run's BoxState, made when it has none.
func (sb *sandboxes) state(r *store.Run) *store.BoxState {
	if r.State.Box == nil {
		r.State.Box = &store.BoxState{}
	}
	return r.State.Box
}

// runDir is where a run's box keeps what ace makes for it (the agent's home, the proxy's socket directory): under
// ace's root, which the box does not see except for what is mounted from there.
func (sb *sandboxes) runDir(id int64) string { return boxDir(sb.e.o.Root, id) }

func boxDir(root string, id int64) string {
	return filepath.Join(root, "boxes", strconv.FormatInt(id, 10))
}

// remove deletes what the run's box left, once its working copy is gone too.
func (sb *sandboxes) remove(ctx context.Context, r *store.Run) {
	sb.stop(r.ID)
	if err := RemoveBox(sb.e.o.Root, r); err != nil {
		sb.e.log.WarnContext(ctx, "remove the run's box", "run", r.ID, "err", err)
	}
}

// RemoveBox deletes what a finished run's box left under root (its agent's home, its socket's directory): ace
// clean removes it with the working copy.
func RemoveBox(root string, r *store.Run) error {
	dirs := []string{boxDir(root, r.ID)}
	if b := r.State.Box; b != nil && b.Proxy != "" {
		dirs = append(dirs, filepath.Dir(b.Proxy))
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// agentCommand is how a runner starts the agent: argv with env and, apart, secrets. Boxed, argv is the box's
// and env its whole environment (nothing of ace's is added to it); unboxed, env is added to what the runner has.
type agentCommand struct {
	argv         []string
	env, secrets map[string]string
	boxed        bool
}

// command is the agent's command argv with its environment, in a box when the run's sandbox says so (terminal:
// for a tmux pane).
func (sb *sandboxes) command(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, argv []string, terminal bool) (agentCommand, error) {
	e := sb.e
	p, err := sb.plan(ctx, r, prof)
	if err != nil {
		return agentCommand{}, err
	}
	home := ""
	if p != nil {
		home = p.home
	}
	le, err := e.agent.agentEnv(ctx, r, prof, vars, home)
	if err != nil {
		return agentCommand{}, err
	}
	if p == nil {
		return agentCommand{argv: argv, env: le.env, secrets: le.secrets}, nil
	}
	b, err := sb.wrap(ctx, r, prof, p, prof.BoxArgv(argv), le, terminal)
	if err != nil {
		return agentCommand{}, err
	}
	return agentCommand{argv: b.Argv, env: b.Env, secrets: le.secrets, boxed: true}, nil
}
