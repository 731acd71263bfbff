package workflow

// withRunners gives e its runners, the panes they share, liveness and the usage limits, each built with only the
// collaborators it uses: the parts it calls, and of the engine's core a narrow interface it declares (runHost,
// paneEvents, stuckEvents, limitsHost), the configuration, the clock, the store's runs and the logger. The parts
// it hands them are e's: withParts calls it once they are made.
func withRunners(e *Engine) {
	now := clock(e.o.Now)
	e.alive = &liveness{core: e, cfg: e.cfg, now: now, box: e.box}
	p := &panes{core: e, runs: e.o.Store, agent: e.agent, cfg: e.cfg, root: e.o.Root, self: e.o.Self,
		launcher: e.o.Launcher, tmux: e.o.Sessions}
	e.tmux = &tmuxRunner{core: e, cfg: e.cfg, now: now, log: e.log, root: e.o.Root, issueCheckEvery: e.o.IssueCheckEvery,
		agent: e.agent, prompts: e.prompts, spend: e.spend, alive: e.alive, reach: e.reach, box: e.box,
		panes: p, tmux: p.tmux, seen: map[int64]*observed{}}
	e.exec = &execRunner{core: e, cfg: e.cfg, now: now, log: e.log, root: e.o.Root, supervisor: e.o.Supervisor,
		agent: e.agent, prompts: e.prompts, spend: e.spend, alive: e.alive, reach: e.reach}
	e.live = &liveRunner{core: e, cfg: e.cfg, now: now, log: e.log, root: e.o.Root, liveHost: e.o.LiveHost,
		agent: e.agent, prompts: e.prompts, spend: e.spend, alive: e.alive, reach: e.reach, panes: p}
	e.runners = map[string]Runner{}
	for _, rn := range []Runner{e.tmux, e.exec, e.live} { // one of each of runnerKinds
		e.runners[rn.Name()] = rn
	}
	e.limits = &usageLimits{core: e, cfg: e.cfg, now: now, log: e.log, runs: e.o.Store, profile: e.o.Profile,
		status: e.status, slots: e.slots}
}
