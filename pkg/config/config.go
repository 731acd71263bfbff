// Package config is ace.toml: defaults, then the file, then the environment. Unknown keys are rejected with
// their line, parse errors carry line and column, and semantic errors name the key.
package config

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/aceworks/ace/pkg/agents"
)

// Config is ace's whole configuration. Field tags are the keys of ace.toml.
type Config struct {
	Workspace WorkspaceConfig        `toml:"workspace"`
	GitHub    GitHubConfig           `toml:"github"`
	Tracker   TrackerConfig          `toml:"tracker"`
	Trigger   TriggerConfig          `toml:"trigger"`
	Labels    LabelsConfig           `toml:"labels"`
	Agent     AgentDefaults          `toml:"agent"`
	Agents    map[string]AgentConfig `toml:"agents"`
	Tmux      TmuxConfig             `toml:"tmux"`
	Monitor   MonitorConfig          `toml:"monitor"`
	Limits    LimitsConfig           `toml:"limits"`
	Budget    BudgetConfig           `toml:"budget"`
	Prices    map[string]Price       `toml:"prices"`
	Poll      PollConfig             `toml:"poll"`
	PR        PRConfig               `toml:"pr"`
	Git       GitConfig              `toml:"git"`
	Secrets   SecretsConfig          `toml:"secrets"`
	Memory    MemoryConfig           `toml:"memory"`
	Serve     ServeConfig            `toml:"serve"`
	Notify    []NotifyConfig         `toml:"notify"`
	Store     StoreConfig            `toml:"store"`
	Host      HostConfig             `toml:"host"`
	// Sandbox is the box every agent process runs in (sandbox.go); agents and repositories add to it.
	Sandbox SandboxConfig `toml:"sandbox"`
	// Repos holds per-repository workflows ([repos."owner/name"]), over each repository's .ace/workflow.toml.
	Repos map[string]RepoWorkflow `toml:"repos"`
	// Eval tunes ace eval.
	Eval EvalConfig `toml:"eval"`
}

// EvalConfig tunes `ace eval build`: how many candidates it checks at once and how long one check may take.
type EvalConfig struct {
	// Jobs is how many candidates are checked at once (ace eval run: runs made at once); 0 takes
	// poll.max_concurrent.
	Jobs int `toml:"jobs"`
	// CheckTimeout bounds one check (its setup included); 0 takes the repository workflow's verify_timeout, or
	// 10 minutes for a --check command.
	CheckTimeout Duration `toml:"check_timeout"`
	// Releases are install prefixes (npm's --prefix: node_modules/<package> inside) where ace eval looks for a
	// release named in --agents (claude@2.1.331) before the ones ace keeps under its root (ace agents install).
	Releases []string `toml:"releases"`
}

// HostConfig names this machine among the ace hosts that share a store (a fleet on PostgreSQL).
type HostConfig struct {
	// Name identifies the host: its runs' sessions and working copies are here, and their jobs go to its queue.
	// "" = the machine's hostname.
	Name string `toml:"name"`
	// DeadAfter is how long a host may go without a heartbeat before its runs move to another host.
	DeadAfter Duration `toml:"dead_after"`
}

// StoreConfig says where ace keeps its state and its job queue.
type StoreConfig struct {
	// URL puts them on PostgreSQL (postgres://user@host:port/database), shared by every ace host that names the
	// same database: a fleet. Empty keeps them in SQLite, <workspace.root>/ace.db. ACE_STORE_URL overrides.
	URL string `toml:"url"`
	// Keep is how long a finished run (done, failed, cancelled, closed) stays, with its events: older ones are
	// pruned once an hour (by one host of a fleet). 0 keeps them for ever.
	Keep Duration `toml:"keep"`
}

// Redacted is the store URL fit to show: its password, wherever written, as xxxxx.
func (s StoreConfig) Redacted() string {
	u, err := url.Parse(s.URL)
	if err != nil {
		if s.URL == "" {
			return ""
		}
		return "(unreadable URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// WorkspaceConfig says where ace keeps working copies, mirrors, logs and its store.
type WorkspaceConfig struct {
	Root string `toml:"root"`
	// GitTimeout bounds one git command ace runs on a working copy (status, add, commit, a pack for a push).
	GitTimeout Duration `toml:"git_timeout"`
}

// SecretEnv are the variables ace.toml names as holding a tracker's secret (github.token_env), whichever tracker
// ace works with: setup and verify never get them, and their values never reach the repository's memory.
func (c *Config) SecretEnv() []string { return slices.Clone(c.GitHub.TokenEnv) }

// GitHubConfig is the GitHub API and the repositories ace watches.
type GitHubConfig struct {
	APIURL   string   `toml:"api_url"`
	TokenEnv []string `toml:"token_env"`
	Repos    []string `toml:"repos"`
}

// TrackerConfig picks the issue tracker.
type TrackerConfig struct {
	Kind string `toml:"kind"`
	Path string `toml:"path"`
}

// TriggerConfig says which label starts a run and whose labelling counts.
type TriggerConfig struct {
	Label         string   `toml:"label"`
	MinPermission string   `toml:"min_permission"`
	AllowedUsers  []string `toml:"allowed_users"`
}

// LabelsConfig names the status labels ace puts on issues.
type LabelsConfig struct {
	Running     string `toml:"running"`
	NeedsInput  string `toml:"needs_input"`
	Done        string `toml:"done"`
	Failed      string `toml:"failed"`
	AgentPrefix string `toml:"agent_prefix"`
	ModelPrefix string `toml:"model_prefix"`
	// BestOfPrefix followed by N (ace:best-of-3) works the issue best-of-N, whatever agent.attempts says.
	BestOfPrefix string `toml:"best_of_prefix"`
}

// AgentDefaults chooses the agent when an issue does not, and the agents a run falls back to at a usage limit.
type AgentDefaults struct {
	// Default is the agent of the issues that do not choose one, or AgentAuto (auto.go).
	Default string `toml:"default"`
	// AutoMinRuns and AutoOtherwise tune Default = "auto": the scored runs an agent needs in the repository's eval
	// to be chosen, and the agent of a repository whose eval recommends none.
	AutoMinRuns   int    `toml:"auto_min_runs"`
	AutoOtherwise string `toml:"auto_otherwise"`
	// Fallback (opt-in) lists the agents a run is handed to, in order, when its agent pauses at a usage limit that
	// resets more than FallbackAfter from now; each at most once per run, and none that is at a limit itself.
	// Empty: the run waits for the reset.
	Fallback      []string `toml:"fallback"`
	FallbackAfter Duration `toml:"fallback_after"`
	// Attempts > 1 works each issue best-of-N (bestof.go): N agents in N working copies, the pull request from the
	// best; AttemptsAgents are their agents in turn (empty: the agent N times). An ace:best-of-N label
	// (Labels.BestOfPrefix) sets N for one issue.
	Attempts       int      `toml:"attempts"`
	AttemptsAgents []string `toml:"attempts_agents"`
}

// AgentConfig is [agents.<name>]: the agent's settings, which agents.Resolve lays over its built-in profile
// (for claude, codex and gemini every one is optional), and its additions to the sandbox.
type AgentConfig struct {
	agents.Override
	// Sandbox adds to [sandbox] for this agent's runs (its model endpoints, say), or sets its mode.
	Sandbox SandboxConfig `toml:"sandbox"`
}

// TmuxConfig shapes the agents' tmux sessions and how prompts are typed into them.
type TmuxConfig struct {
	Socket         string   `toml:"socket"`
	Width          int      `toml:"width"`
	Height         int      `toml:"height"`
	HistoryLimit   int      `toml:"history_limit"`
	EnterCount     int      `toml:"enter_count"`
	EnterDelay     Duration `toml:"enter_delay"`
	SubmitRetries  int      `toml:"submit_retries"`
	StartupTimeout Duration `toml:"startup_timeout"`
}

// MonitorConfig tunes how ace watches a working agent.
type MonitorConfig struct {
	Interval         Duration `toml:"interval"`
	IdleAfter        Duration `toml:"idle_after"`
	Settle           Duration `toml:"settle"`
	Nudge            string   `toml:"nudge"`
	MaxNudges        int      `toml:"max_nudges"`
	MaxRestarts      int      `toml:"max_restarts"`
	Timeout          Duration `toml:"timeout"`
	ExecIdleTimeout  Duration `toml:"exec_idle_timeout"`
	ExecTurnTimeout  Duration `toml:"exec_turn_timeout"`
	CompactThreshold int64    `toml:"compact_threshold"`
	// UnreachableAfter is how long an agent may fail to reach its model (its CLI retrying the API, its box's
	// proxy failing to connect to the model's endpoint) before a human is asked on the issue.
	UnreachableAfter Duration `toml:"unreachable_after"`
	// StuckAfter is how long a working agent (its screen says busy, or nothing ace knows) may show no sign of work
	// at all — traffic, CPU, session files, working copy, screen — before a human is asked.
	StuckAfter Duration `toml:"stuck_after"`
}

// MemoryConfig is the per-repository memory every run reads and adds to.
type MemoryConfig struct {
	Enabled        bool  `toml:"enabled"`
	AgentsMaxBytes int64 `toml:"agents_max_bytes"`
	StatusMaxBytes int64 `toml:"status_max_bytes"`
}

// PollConfig tunes `ace poll`.
type PollConfig struct {
	Interval      Duration `toml:"interval"`
	MaxConcurrent int      `toml:"max_concurrent"`
}

// PRConfig shapes branches and pull requests, and how ace carries its pull request to merge.
type PRConfig struct {
	Draft  bool   `toml:"draft"`
	Branch string `toml:"branch"`
	// Follow keeps a run alive after its pull request opens: CI failures, reviews, conflicts and trusted
	// `/ace ` comments go back to the agent until the pull request is merged or closed.
	Follow bool `toml:"follow"`
	// MaxRounds bounds the follow-up rounds per pull request (the first prompt is not one).
	MaxRounds int `toml:"max_rounds"`
	// ReleaseAfter bounds how long an idle agent (a pull request followed between rounds, a human asked, a usage
	// limit) is kept while no run needs its slot — one that does takes it at once: the run keeps its working copy
	// and conversation, and its next round, answer or resume takes a slot and continues it. 0: no bound.
	ReleaseAfter Duration `toml:"release_after"`
	// LogBudget is the most bytes of a failed job's log tail handed to the agent.
	LogBudget int `toml:"log_budget"`
	// NeedsHumanLabel is put on the issue when ace stops trying (rounds exhausted, the same failure twice).
	NeedsHumanLabel string            `toml:"needs_human_label"`
	Reactions       PRReactionsConfig `toml:"reactions"`
}

// PRReactionsConfig turns each kind of follow-up round on or off.
type PRReactionsConfig struct {
	CI        bool `toml:"ci"`
	Reviews   bool `toml:"reviews"`
	Conflicts bool `toml:"conflicts"`
	Commands  bool `toml:"commands"`
}

// GitConfig is the identity of ace's own commits.
type GitConfig struct {
	AuthorName  string `toml:"author_name"`
	AuthorEmail string `toml:"author_email"`
}

// SecretsConfig says where named secrets come from besides the environment.
type SecretsConfig struct {
	File           string            `toml:"file"`
	CommandTimeout Duration          `toml:"command_timeout"`
	Commands       map[string]string `toml:"commands"`
}

// Duration is a time.Duration written as a string in TOML ("300ms", "2h").
type Duration struct{ time.Duration }

// D makes a Duration.
func D(d time.Duration) Duration { return Duration{d} }

// UnmarshalText parses "300ms", "2h" and the like.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use e.g. \"300ms\", \"90s\", \"2h\")", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration the way it is read.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Default is the configuration with nothing set.
func Default() *Config {
	return &Config{
		Workspace: WorkspaceConfig{Root: "~/.local/share/ace", GitTimeout: D(2 * time.Minute)},
		GitHub:    GitHubConfig{TokenEnv: []string{"GITHUB_TOKEN", "GITHUB_CONTROL_API_KEY"}},
		Tracker:   TrackerConfig{Kind: "github"},
		Trigger:   TriggerConfig{Label: "ace", MinPermission: "write"},
		Labels: LabelsConfig{Running: "ace:running", NeedsInput: "ace:needs-input", Done: "ace:done", Failed: "ace:failed",
			AgentPrefix: "ace:agent:", ModelPrefix: "ace:model:", BestOfPrefix: "ace:best-of-"},
		Agent:  AgentDefaults{Default: "codex", FallbackAfter: D(30 * time.Minute), AutoMinRuns: 10, Attempts: 1},
		Agents: map[string]AgentConfig{},
		Tmux: TmuxConfig{Socket: "ace", Width: 220, Height: 50, HistoryLimit: 50000, EnterCount: 2,
			EnterDelay: D(300 * time.Millisecond), SubmitRetries: 3, StartupTimeout: D(60 * time.Second)},
		Monitor: MonitorConfig{Interval: D(time.Second), IdleAfter: D(3 * time.Minute), Settle: D(5 * time.Second), Nudge: "please continue",
			MaxNudges: 3, MaxRestarts: 2, Timeout: D(2 * time.Hour), ExecIdleTimeout: D(4 * time.Minute),
			ExecTurnTimeout: D(300 * time.Second), CompactThreshold: 50 << 10, StuckAfter: D(3 * time.Minute),
			UnreachableAfter: D(2 * time.Minute)},
		Limits: defaultLimits(),
		Poll:   PollConfig{Interval: D(2 * time.Minute), MaxConcurrent: 4},
		PR: PRConfig{Draft: true, Branch: "ace/{issue}-{slug}", Follow: true, MaxRounds: 3, LogBudget: 8 << 10,
			ReleaseAfter:    D(10 * time.Minute),
			NeedsHumanLabel: "ace:needs-human", Reactions: PRReactionsConfig{CI: true, Reviews: true, Conflicts: true, Commands: true}},
		Git:     GitConfig{AuthorName: "ace", AuthorEmail: "ace@localhost"},
		Secrets: SecretsConfig{CommandTimeout: D(10 * time.Second), Commands: map[string]string{}},
		Memory:  MemoryConfig{Enabled: true, AgentsMaxBytes: 64 << 10, StatusMaxBytes: 256 << 10},
		Serve:   ServeConfig{Addr: "127.0.0.1:7777", MaxBodyBytes: 1 << 20},
		Host:    HostConfig{DeadAfter: D(2 * time.Minute)},
		Store:   StoreConfig{Keep: D(30 * 24 * time.Hour)},
		Sandbox: SandboxConfig{Mode: SandboxAuto},
		Repos:   map[string]RepoWorkflow{},
	}
}

// AgentConfigFor returns the configuration of agent name (zero for a built-in agent left unconfigured).
func (c *Config) AgentConfigFor(name string) (AgentConfig, bool) {
	a, ok := c.Agents[name]
	return a, ok
}
