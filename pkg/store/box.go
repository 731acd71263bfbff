package store

// BoxState is the run's sandbox (package sandbox): where its agent's home is, what the run's egress proxy let
// out and refused, and what file-system attempts its box kept the agent from. Nil for a run whose agent never started, or started on the host (sandbox mode off).
type BoxState struct {
	// Proxy is the egress proxy's socket while the run's agent runs boxed: the ace process that works the run
	// serves it, again after a restart. Empty when the agent runs unboxed.
	Proxy string `json:"proxy,omitzero"`
	// Home is the agent's home for this run (<root>/boxes/<run>/homes/<agent>): its CLI keeps its sessions there,
	// where ace reads their usage.
	Home string `json:"home,omitzero"`
	// Unboxed says why the agent runs without a box (mode auto, boxes unavailable here); the warning event
	// saying so is recorded once per run.
	Unboxed string `json:"unboxed,omitzero"`
	// Refused counts the connections the proxy refused; RefusedTo names the first destinations (host:port).
	Refused   int      `json:"refused,omitzero"`
	RefusedTo []string `json:"refused_to,omitzero"`
	// Reached names the destinations the proxy let out (host:port): each is recorded once in the run's events.
	Reached []string `json:"reached,omitzero"`
	// Unreachable counts the connections the proxy let out but could not make (nothing listening there, a name
	// that does not resolve); UnreachableTo names the first destinations.
	Unreachable   int      `json:"unreachable,omitzero"`
	UnreachableTo []string `json:"unreachable_to,omitzero"`
	// Blocked counts the file-system attempts the box kept the agent from (a hidden path, a write outside its
	// own, another process's /proc entry); BlockedAt names the first paths.
	Blocked   int      `json:"blocked,omitzero"`
	BlockedAt []string `json:"blocked_at,omitzero"`
	// FilesUnrecorded says why the box's file attempts go unrecorded, in part or whole (no seccomp user
	// notification here); the event saying so is recorded once per reason.
	FilesUnrecorded string `json:"files_unrecorded,omitzero"`
}
