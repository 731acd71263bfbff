package store

import "time"

// ReachState is the run's agent failing to reach its model: its CLI retrying the model's API (in its stream, on
// its screen) or its box's proxy failing to connect to the model's endpoint, since the model last answered. ace
// show, ace ls, the dashboard and the status comment say so; after monitor.unreachable_after it goes to a human on
// the issue. Nil while the model answers.
type ReachState struct {
	// Since is the first sign, At the latest.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Retries is the CLI's own count of its retries (its latest attempt number, of Max when it says); Failed
	// counts the connections to the model's endpoint the box's proxy could not make.
	Retries int `json:"retries,omitzero"`
	Max     int `json:"max,omitzero"`
	Failed  int `json:"failed,omitzero"`
	// Dest is the destination (host:port) the agent cannot reach, where known; From what named it (the
	// variable, the settings file), for the fix.
	Dest string `json:"dest,omitzero"`
	From string `json:"from,omitzero"`
	// Error is what the CLI or the proxy said of the failure last; Hint what would mend it.
	Error string `json:"error,omitzero"`
	Hint  string `json:"hint,omitzero"`
	// Asked is set once a human was asked about it.
	Asked bool `json:"asked,omitzero"`
}
