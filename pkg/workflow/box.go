package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// The engine's use of the runs' boxes (package runbox): built with what they use (newBoxes, engine.go), started
// with the agent (a runner's command), kept at every step (Engine.Step), served again when this process takes its
// host's runs over (Engine.StartProxies).

// agentCommand is how a runner starts the agent: argv with env and, apart, secrets. Boxed, argv is the box's
// and env its whole environment (nothing of ace's is added to it); unboxed, env is added to what the runner has.
type agentCommand struct {
	argv         []string
	env, secrets map[string]string
	boxed        bool
}

// hosted is a program of ace's own that holds the agent in its box (the live host, `ace __live`): program is the
// agent's CLI, which it starts; readWrite what it writes (its spec, socket and transcript); inBox its argv with
// ace's executable as the box has it.
type hosted struct {
	program   string
	readWrite []string
	inBox     []string
}

// command is the agent's command argv with its environment, in a box when the run's sandbox says so (terminal:
// for a tmux pane).
func (ag *runAgent) command(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, argv []string, terminal bool) (agentCommand, error) {
	return ag.commandOf(ctx, r, prof, vars, argv, terminal, nil)
}

// commandOf is command, for a program of ace's that hosts the agent when host is set (argv: its argv outside
// a box).
func (ag *runAgent) commandOf(ctx context.Context, r *store.Run, prof agents.Profile, vars agents.Vars, argv []string, terminal bool, host *hosted) (agentCommand, error) {
	box := ag.box
	p, err := box.Plan(ctx, r, prof)
	if err != nil {
		return agentCommand{}, err
	}
	home := ""
	if p != nil {
		home = p.Home
	}
	le, err := ag.agentEnv(ctx, r, prof, vars, home)
	if err != nil {
		return agentCommand{}, err
	}
	if p == nil {
		return agentCommand{argv: argv, env: le.env, secrets: le.secrets}, nil
	}
	l := runbox.Launch{Argv: prof.BoxArgv(argv), Env: le.env, ReadWrite: le.logins, Terminal: terminal}
	if host != nil {
		l.Argv, l.Program = host.inBox, host.program
		l.ReadWrite = append(append([]string(nil), le.logins...), host.readWrite...)
	}
	b, err := box.Wrap(ctx, r, prof, p, l)
	if err != nil {
		return agentCommand{}, err
	}
	return agentCommand{argv: b.Argv, env: b.Env, secrets: le.secrets, boxed: true}, nil
}
