package headless

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// Spec is one turn of a headless agent, as the engine hands it to the supervisor (`ace __headless SPECFILE`).
// It never holds a secret: those travel in SecretsFile, the same 0600 read-once env file `ace __launch` reads.
type Spec struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"` // plain variables added to the agent's environment
	// SecretsFile holds the agent's secret variables (tmuxops.WriteEnvFile); the supervisor reads and deletes it,
	// puts them in the agent's environment only, and redacts their values from everything it writes.
	SecretsFile string `json:"secrets_file,omitempty"`
	Dir         string `json:"dir"`
	Prompt      string `json:"prompt"` // written to the agent's stdin, never put in argv
	Format      string `json:"format"` // claude, codex or gemini
	// TranscriptDir receives <session id>.jsonl, appended to by every turn of the conversation.
	TranscriptDir string `json:"transcript_dir"`
	// SessionID is the conversation this turn resumes ("" for the first turn).
	SessionID string `json:"session_id,omitempty"`
	// Orphan is where the raw stream goes when it never names a session (a CLI that dies at start).
	Orphan     string `json:"orphan"`
	StatusPath string `json:"status_path"`
	Turn       int    `json:"turn"`
	// IdleTimeout ends a turn silent this long that shows no sign of work either: its process tree using CPU, or a
	// touch of Pulse since the last look.
	IdleTimeout time.Duration `json:"idle_timeout"`
	TurnTimeout time.Duration `json:"turn_timeout"`
	// Pulse is a file ace writes when it sees the agent work where the supervisor cannot (traffic through the run's
	// proxy, its session files, its working copy); "" for none.
	Pulse string `json:"pulse,omitempty"`
	// KillGrace is how long the agent's process group has between SIGTERM and SIGKILL.
	KillGrace time.Duration `json:"kill_grace"`
	// ExitGrace is how long the agent may take to exit once its stream reported the turn's result; then it is
	// ended (OutcomeLingered). Zero: DefaultExitGrace.
	ExitGrace time.Duration `json:"exit_grace,omitempty"`
	// Boxed says Argv runs the agent in a sandbox box (bwrap, package sandbox): its environment is then exactly
	// Env and the secrets, nothing of the supervisor's (which is ace's, tokens and all), and a stop's SIGTERM
	// goes to the processes inside the box, not to bwrap, which would die of it and take the agent down before
	// it could save its conversation.
	Boxed bool `json:"boxed,omitempty"`
}

// Outcomes of a turn, as Status.Outcome.
const (
	OutcomeRunning     = "running"
	OutcomeExited      = "exited"       // the agent exited on its own; ExitCode says how
	OutcomeLingered    = "lingered"     // the agent reported its turn's result, then did not exit: ended
	OutcomeIdleTimeout = "idle_timeout" // killed: no output nor sign of work for Spec.IdleTimeout
	OutcomeTurnTimeout = "turn_timeout" // killed: the turn took longer than Spec.TurnTimeout
	OutcomeStopped     = "stopped"      // killed: the supervisor was told to stop (SIGTERM)
	OutcomeStartFailed = "start_failed" // the agent could not be started
)

// DefaultExitGrace is how long an agent may take to exit after its turn's result, when the spec says nothing: a
// CLI saves its session as it exits (claude resumes from it), which took seconds on a loaded machine, and gemini
// 0.61 there once printed its result and never exited.
const DefaultExitGrace = 30 * time.Second

// Status is what the supervisor tells the engine about a turn, rewritten atomically as the turn goes.
type Status struct {
	Turn            int       `json:"turn"`
	SupervisorPID   int       `json:"supervisor_pid"`
	SupervisorStart uint64    `json:"supervisor_start"`
	AgentPID        int       `json:"agent_pid,omitempty"`
	AgentStart      uint64    `json:"agent_start,omitempty"`
	SessionID       string    `json:"session_id,omitempty"`
	Transcript      string    `json:"transcript,omitempty"`
	StartedAt       time.Time `json:"started_at"`
	Outcome         string    `json:"outcome"`
	Done            bool      `json:"done"` // the turn is over and the agent's process group is gone
	ExitCode        int       `json:"exit_code"`
	StderrTail      string    `json:"stderr_tail,omitempty"`
	ResultStatus    string    `json:"result_status,omitempty"` // status of the stream's result event
	ResultError     bool      `json:"result_error,omitempty"`
	LastText        string    `json:"last_text,omitempty"` // the last assistant message, for a human to read
	Events          int       `json:"events"`
	Raw             int       `json:"raw"`
	Usage           Usage     `json:"usage"`
	// Limited says the stream reported a usage or rate limit; LimitResetsAt when it resets (zero: not said).
	Limited       bool      `json:"limited,omitempty"`
	LimitResetsAt time.Time `json:"limit_resets_at,omitzero"`
	// Retry is the CLI retrying its model's API since the model last answered; nil once it answers, which
	// Answered says (the model answered in this turn, after its last retry if any).
	Retry    *Retry `json:"retry,omitempty"`
	Answered bool   `json:"answered,omitempty"`
}

// Retry is a headless CLI retrying its model's API: its latest attempt, of Max when it says, what it said of the
// error, and when.
type Retry struct {
	Attempt int       `json:"attempt,omitempty"`
	Max     int       `json:"max,omitempty"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
}

// ReadStatus reads a status file; os.ErrNotExist when the supervisor has not written one yet.
func ReadStatus(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("status file %s: %w", path, err)
	}
	return &s, nil
}

// writeJSON writes v to path atomically: a reader sees the old file or the new one, never half of one.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// readSpec reads and deletes a spec file: it lives only until the supervisor has it. Its format must be one of
// parsers'.
func readSpec(path string, parsers Parsers) (*Spec, error) {
	b, err := os.ReadFile(path)
	os.Remove(path)
	if err != nil {
		return nil, err
	}
	var s Spec
	err = json.Unmarshal(b, &s)
	if err == nil && (len(s.Argv) == 0 || s.StatusPath == "" || s.TranscriptDir == "") {
		err = errors.New("argv, status_path and transcript_dir are required")
	}
	if err == nil {
		_, err = parsers.New(s.Format)
	}
	if err != nil {
		// The secrets file must not outlive a spec that is refused: find it with as little of the spec as
		// can be read (a spec from another version of ace, say).
		var f struct {
			SecretsFile string `json:"secrets_file"`
		}
		if json.Unmarshal(b, &f) == nil && f.SecretsFile != "" {
			os.Remove(f.SecretsFile)
		}
		return nil, fmt.Errorf("spec %s: %w", path, err)
	}
	return &s, nil
}
