package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

var permissions = []string{"read", "triage", "write", "maintain", "admin"}

var repoRe = regexp.MustCompile(`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$`)

// Validate checks meaning, not syntax: every problem found, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c.Limits.validate(bad)
	c.Budget.validate(bad)
	c.validateFallback(bad)
	c.validateBestOf(bad)
	validatePrices(c.Prices, bad)
	if strings.TrimSpace(c.Workspace.Root) == "" {
		bad("workspace.root", "empty")
	}
	switch c.Tracker.Kind {
	case "github":
	case "local":
		if c.Tracker.Path == "" {
			bad("tracker.path", "empty (the local tracker needs a folder)")
		}
	default:
		bad("tracker.kind", "%q is not \"github\" or \"local\"", c.Tracker.Kind)
	}
	if c.GitHub.APIURL != "" {
		if u, err := url.Parse(c.GitHub.APIURL); err != nil || u.Scheme == "" || u.Host == "" {
			bad("github.api_url", "%q is not an absolute URL", c.GitHub.APIURL)
		}
	}
	if c.Tracker.Kind == "github" && len(c.GitHub.TokenEnv) == 0 {
		bad("github.token_env", "empty (name at least one environment variable or secret holding the token)")
	}
	for i, r := range c.GitHub.Repos {
		if !repoRe.MatchString(r) {
			bad(fmt.Sprintf("github.repos[%d]", i), "%q is not owner/name", r)
		}
	}
	if c.Trigger.Label == "" {
		bad("trigger.label", "empty")
	}
	if !slices.Contains(permissions, c.Trigger.MinPermission) {
		bad("trigger.min_permission", "%q is not one of %s", c.Trigger.MinPermission, strings.Join(permissions, ", "))
	}
	for key, v := range map[string]string{"labels.running": c.Labels.Running, "labels.needs_input": c.Labels.NeedsInput,
		"labels.done": c.Labels.Done, "labels.failed": c.Labels.Failed} {
		if v == "" {
			bad(key, "empty")
		}
	}
	if c.Agent.Default == "" {
		bad("agent.default", "empty")
	} else if c.Agent.Default == AgentAuto {
		c.validateAuto(bad)
	} else if _, ok := c.Agents[c.Agent.Default]; !ok && !isBuiltin(c.Agent.Default) {
		bad("agent.default", "%q is neither a built-in agent (%s) nor defined under [agents]", c.Agent.Default,
			strings.Join(agents.BuiltinNames(), ", "))
	}
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.validateAgent(n, c.Agents[n], bad)
	}
	t := c.Tmux
	if t.Socket == "" || strings.ContainsAny(t.Socket, "/ ") {
		bad("tmux.socket", "%q must be a plain name", t.Socket)
	}
	positive := map[string]int{"tmux.width": t.Width, "tmux.height": t.Height, "tmux.history_limit": t.HistoryLimit,
		"tmux.enter_count": t.EnterCount, "poll.max_concurrent": c.Poll.MaxConcurrent}
	for k, v := range positive {
		if v <= 0 {
			bad(k, "must be positive, is %d", v)
		}
	}
	for k, v := range map[string]int{"tmux.submit_retries": t.SubmitRetries, "monitor.max_nudges": c.Monitor.MaxNudges,
		"monitor.max_restarts": c.Monitor.MaxRestarts} {
		if v < 0 {
			bad(k, "must not be negative, is %d", v)
		}
	}
	m := c.Monitor
	for k, d := range map[string]Duration{"tmux.startup_timeout": t.StartupTimeout, "monitor.interval": m.Interval,
		"monitor.idle_after": m.IdleAfter, "monitor.settle": m.Settle, "monitor.timeout": m.Timeout, "monitor.exec_idle_timeout": m.ExecIdleTimeout,
		"monitor.exec_turn_timeout": m.ExecTurnTimeout, "monitor.stuck_after": m.StuckAfter,
		"monitor.unreachable_after": m.UnreachableAfter, "poll.interval": c.Poll.Interval,
		"secrets.command_timeout": c.Secrets.CommandTimeout, "workspace.git_timeout": c.Workspace.GitTimeout} {
		if d.Duration <= 0 {
			bad(k, "must be a positive duration, is %s", d.Duration)
		}
	}
	if m.ExecIdleTimeout.Duration > 0 && m.ExecIdleTimeout.Duration < m.StuckAfter.Duration {
		// A headless turn silent with every sign of work flat is ended at exec_idle_timeout: below stuck_after,
		// liveness never gets to ask a human about it, as it does for the other runners.
		bad("monitor.exec_idle_timeout", "%s is below monitor.stuck_after (%s): a silent turn with no sign of work "+
			"would be ended before ace asks a human about it; make it at least stuck_after", m.ExecIdleTimeout.Duration,
			m.StuckAfter.Duration)
	}
	if c.Eval.Jobs < 0 {
		bad("eval.jobs", "must not be negative (0 takes poll.max_concurrent), is %d", c.Eval.Jobs)
	}
	if c.Eval.CheckTimeout.Duration < 0 {
		bad("eval.check_timeout", "must not be negative (0 takes the verify command's timeout), is %s", c.Eval.CheckTimeout.Duration)
	}
	for i, d := range c.Eval.Releases {
		if !filepath.IsAbs(d) {
			bad(fmt.Sprintf("eval.releases[%d]", i), "%q must be an absolute path", d)
		}
	}
	if m.CompactThreshold < 0 {
		bad("monitor.compact_threshold", "must not be negative (0 turns compaction off), is %d", m.CompactThreshold)
	}
	for k, v := range map[string]int64{"memory.agents_max_bytes": c.Memory.AgentsMaxBytes,
		"memory.status_max_bytes": c.Memory.StatusMaxBytes} {
		if v < 1024 {
			bad(k, "must be at least 1024 bytes, is %d", v)
		}
	}
	if t.EnterDelay.Duration < 0 {
		bad("tmux.enter_delay", "must not be negative")
	}
	if !strings.Contains(c.PR.Branch, "{issue}") {
		bad("pr.branch", "%q must contain {issue} so that every issue gets its own branch", c.PR.Branch)
	}
	if c.PR.MaxRounds < 0 {
		bad("pr.max_rounds", "must not be negative (0 sends no follow-up rounds), is %d", c.PR.MaxRounds)
	}
	if c.PR.LogBudget < 0 || c.PR.LogBudget > 1<<20 {
		bad("pr.log_budget", "must be between 0 and 1048576 bytes, is %d", c.PR.LogBudget)
	}
	if c.PR.Follow && strings.TrimSpace(c.PR.NeedsHumanLabel) == "" {
		bad("pr.needs_human_label", "must be set when pr.follow is on")
	}
	if c.PR.ReleaseAfter.Duration < 0 {
		bad("pr.release_after", "must not be negative, is %s", c.PR.ReleaseAfter.Duration)
	}
	if c.Host.DeadAfter.Duration < 10*time.Second {
		bad("host.dead_after", "must be at least 10s (a host heartbeats every quarter of it), is %s", c.Host.DeadAfter.Duration)
	}
	if k := c.Store.Keep.Duration; k != 0 && k < time.Hour {
		bad("store.keep", "must be 0 (keep every run) or at least 1h, is %s", k)
	}
	if c.Store.URL != "" {
		// The message never quotes the URL: it may hold a password.
		if u, err := url.Parse(c.Store.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad("store.url", "not a PostgreSQL URL (postgres://user@host:port/database)")
		}
	}
	if c.Git.AuthorName == "" || c.Git.AuthorEmail == "" {
		bad("git", "author_name and author_email must be set")
	}
	c.validateServe(bad)
	c.validateRepos(bad)
	c.validateSandboxes(bad)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func (c *Config) validateAgent(name string, a AgentConfig, bad func(key, format string, args ...any)) {
	key := "agents." + name
	builtin := isBuiltin(name)
	// A custom agent lives in ace.toml alone: a command for tmux, or only the headless command when it runs
	// headless.
	if !builtin && strings.TrimSpace(a.Command) == "" && !(a.Runner == store.RunnerExec && strings.TrimSpace(a.Headless) != "") {
		bad(key+".command", "empty (or runner = %q with headless and headless_format)", store.RunnerExec)
	}
	switch a.Runner {
	case "", store.RunnerTmux, store.RunnerExec:
	case store.RunnerLive:
		if p, ok := agents.Builtin(name); !ok || p.Live == "" {
			bad(key+".runner", "%q is for the built-in agents with a live protocol (claude, codex, gemini)", store.RunnerLive)
		}
	default:
		bad(key+".runner", "%q is not %q, %q or %q", a.Runner, store.RunnerTmux, store.RunnerExec, store.RunnerLive)
	}
	formats := agents.Parsers().Formats()
	if a.HeadlessFormat != "" && !slices.Contains(formats, a.HeadlessFormat) {
		bad(key+".headless_format", "%q is not one of %s", a.HeadlessFormat, strings.Join(formats, ", "))
	}
	if a.Runner == store.RunnerExec && !builtinHeadless(name) {
		// A custom agent has no built-in headless command or stream shape to fall back on.
		if strings.TrimSpace(a.Headless) == "" {
			bad(key+".headless", "empty (runner %q needs the headless command)", store.RunnerExec)
		}
		if a.HeadlessFormat == "" {
			bad(key+".headless_format", "empty (runner %q needs the stream format: %s)", store.RunnerExec, strings.Join(formats, ", "))
		}
	}
	if a.HeadlessResume != "" && !strings.Contains(a.HeadlessResume, "{session_id}") {
		bad(key+".headless_resume", "%q must contain {session_id}", a.HeadlessResume)
	}
	switch a.Home {
	case "", "isolated":
	default:
		bad(key+".home", "%q is not \"\" or \"isolated\"", a.Home)
	}
	if a.GitHubMCP != "" {
		if u, err := url.Parse(a.GitHubMCP); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad(key+".github_mcp", "%q is not an http(s) URL", a.GitHubMCP)
		}
	}
	if f := a.ContextFile; f != "" && (strings.ContainsAny(f, "/\\") || f == "." || f == ".." || f == ".git" ||
		strings.HasPrefix(f, ".ace") || f == "ACE_TASK.md") {
		bad(key+".context_file", "%q must be a plain file name at the top of the working copy (like CLAUDE.md)", f)
	}
	// What resolving the agent cannot take (a marker that is no regex) is an error of its key; a custom agent's
	// missing command is told above.
	if _, err := agents.Resolve(name, a.Override); err != nil {
		for _, e := range unjoin(err) {
			var ke *agents.KeyError
			if errors.As(e, &ke) {
				bad(key+"."+ke.Key, "%v", ke.Err)
			}
		}
	}
}

func isBuiltin(name string) bool { _, ok := agents.Builtin(name); return ok }

// builtinHeadless reports whether a built-in agent brings its own headless command.
func builtinHeadless(name string) bool { p, ok := agents.Builtin(name); return ok && p.Headless != "" }

// AgentNames lists the agents the configuration uses: the default (auto's otherwise agent) and every configured one.
func (c *Config) AgentNames() []string {
	first := c.Agent.Default
	if first == AgentAuto {
		first = c.Agent.AutoOtherwise
	}
	names := []string{first}
	for n := range c.Agents {
		if n != first {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	return names
}
