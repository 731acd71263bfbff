package store

// The runners' names, as in config (agents.X.runner), in an agent's profile and in a stored run (Run.Runner).
// They are spelled here only: config, the agents' profiles and the workflow's runners (pkg/workflow runner.go)
// all import them.
const (
	RunnerTmux = "tmux" // the agent's own terminal UI in a tmux session; a run stored without a runner is one
	RunnerExec = "exec" // headless: one turn at a time through the agent's JSON stream, under a supervisor
	RunnerLive = "live" // one long-lived conversation over the CLI's own protocol, in a host in a tmux session
)
