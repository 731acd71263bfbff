package workflow

import (
	"fmt"
	"syscall"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// An agent that is gone without having left work is started again; monitor.max_restarts bounds how often, so that
// an agent that keeps crashing ends its run. Only the agent's own ends count: one the host took — its tmux session
// or server gone (tmux kill-server, a crash, a server ace recovered, every process ended by a host restart), its
// headless supervisor killed or stopped, its live host stopped, its process ended by SIGTERM or SIGHUP (a stop, a
// shutdown, a hangup) — says nothing about the run, and a few of them must not fail a run that did nothing wrong.
// The fence and a move to another host start the agent afresh from claim and spend nothing either. Restarts for
// the host are bounded by monitor.timeout alone. The ruling is the engine's (mayRestart, restarted: node_monitor.go); the cause, here, is the
// runners' evidence.
//
// The evidence, by runner: tmux — a dead pane with the agent's exit status is the agent's, a session that is not
// there the host's; exec — the turn's status written by its supervisor (the CLI's exit code, a kill for silence)
// is the agent's, a supervisor gone before it wrote the end, or stopped by a signal, the host's; live — the host
// exits 1 when its CLI exited by itself (the agent's), 0 when stopped by a signal, and its session goes with the
// tmux server (the host's). Where the run recorded them at the start, the boot id and the tmux server's PID say
// which host event it was.

// exitCause is why a run's agent is gone, as its runner's evidence says.
type exitCause struct {
	how string // what happened ("the agent exited with status 3")
	// host says the host took the agent, not the agent itself: its restart spends none of monitor.max_restarts.
	// why is the evidence.
	host bool
	why  string
}

// agentCause is an agent's own end.
func agentCause(how string) exitCause { return exitCause{how: how} }

// hostCause is an end the host caused, with its evidence.
func hostCause(how, why string) exitCause { return exitCause{how: how, host: true, why: why} }

// signalled reports whether exit status code is a death by SIGTERM or SIGHUP (128+N), which come from outside the
// agent: a stop, a shutdown, a terminal gone.
func signalled(code int) bool {
	return code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGHUP)
}

// paneCause reads why an agent's pane is gone (a tmux agent, or a live host): a dead pane holds the exit status
// of its process, a death by SIGTERM or SIGHUP came from outside; a session that is not there was ended by the
// host, gone says how (sessionGone). what names the process ("the agent", "the live host").
func paneCause(what string, pane tmuxops.Pane, found bool, gone func() string) exitCause {
	switch {
	case !found:
		return hostCause(what+"'s session disappeared", gone())
	case pane.ExitStatus == tmuxops.ExitUnknown:
		return agentCause(what + " exited (tmux did not report its status)")
	case signalled(pane.ExitStatus):
		return hostCause(fmt.Sprintf("%s exited with status %d", what, pane.ExitStatus),
			"it was ended by a signal from outside (SIGTERM or SIGHUP)")
	}
	return agentCause(fmt.Sprintf("%s exited with status %d", what, pane.ExitStatus))
}

// liveCause reads why a live run's host is gone: it exits 1 when its CLI exited by itself (or could not start),
// 0 when it was stopped by a signal; its pane gone went with the tmux session or server.
func liveCause(pane tmuxops.Pane, found bool, gone func() string) exitCause {
	if found && !pane.Dead {
		return agentCause("the live host does not answer on its control socket")
	}
	if found && pane.ExitStatus == 0 {
		return hostCause("the live conversation ended", "its host was stopped by a signal (SIGTERM or SIGHUP) and exited 0")
	}
	c := paneCause("the live host", pane, found, gone)
	if !c.host && found && pane.ExitStatus == 1 {
		c.how = "the live conversation ended: its CLI exited by itself"
	}
	return c
}

// turnCause reads why a headless turn ended badly, from the status its supervisor wrote: a status that says the
// turn runs, of a supervisor that is gone, is the host's (the supervisor killed, every process ended by a host
// restart); a turn its supervisor was told to stop, or whose agent died of SIGTERM or SIGHUP, too. Everything the
// supervisor saw the agent do — its exit code, a kill for silence or length — is the agent's, and so is a turn
// with no status at all (its supervisor never got to write one: nothing says the host took it).
func turnCause(how string, st *headless.Status, reboot bool) exitCause {
	switch {
	case st == nil:
		return agentCause(how)
	case !st.Done && reboot:
		return hostCause(how, "the host restarted: its boot id changed")
	case !st.Done:
		return hostCause(how, fmt.Sprintf("its supervisor (pid %d) is gone without having written the turn's end: "+
			"killed, or ended with every process of the host", st.SupervisorPID))
	case st.Outcome == headless.OutcomeStopped:
		return hostCause(how, "its supervisor was stopped by a signal")
	case st.Outcome == headless.OutcomeExited && signalled(st.ExitCode):
		return hostCause(how, "it was ended by a signal from outside (SIGTERM or SIGHUP)")
	}
	return agentCause(how)
}

// markStart records what tells, when run r's agent is found gone, whether the host restarted meanwhile.
func markStart(r *store.Run) { r.State.Boot = procs.BootID() }

// rebooted reports whether the host restarted since run r's agent started.
func rebooted(r *store.Run) bool {
	b := procs.BootID()
	return r.State.Boot != "" && b != "" && b != r.State.Boot
}
