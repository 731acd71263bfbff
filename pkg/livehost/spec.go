// Package livehost is the program a live run's tmux pane runs (`ace __live SPECFILE`): it holds the run's one
// long-lived agent CLI over its structured protocol (pkg/live), shows the conversation to a human in the pane,
// takes what the human types there as user messages and answers, and serves ace over a unix socket (Client).
// Everything that happens is appended to a JSONL transcript of Records, which outlives the host: a restarted
// host (the runner resumes the CLI's session) continues its numbering.
//
// Every lifetime of a host ends its transcript with an exit or a handshake_failed record, unless the host is
// killed outright.
package livehost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aceworks/ace/pkg/untrusted"
)

// ChildArg is the hidden subcommand: the pane runs `ace __live SPECFILE` (through ace's env-file launcher, which
// puts the agent's secrets in the environment).
const ChildArg = "__live"

// Main's exit codes besides 0 (stopped by SIGTERM or SIGHUP) and 1 (the CLI exited by itself, or could not be
// started: the runner restarts it with Resume).
const (
	ExitUsage     = 2 // the command line, the spec or the socket (another host holds it) is wrong: no CLI ran
	ExitHandshake = 3 // the CLI runs but its protocol handshake fails (live.ErrHandshake)
)

// Spec is what the runner hands the host. It never holds a secret: those are in the environment.
type Spec struct {
	Agent       string   `json:"agent"`                  // "claude", "codex" or "gemini": which pkg/live adapter
	Argv        []string `json:"argv"`                   // live.Options.Argv: the CLI and the user's flags
	Dir         string   `json:"dir"`                    // the working copy
	Resume      string   `json:"resume,omitempty"`       // a session ID to continue (live.Options.Resume)
	AutoApprove bool     `json:"auto_approve,omitempty"` // allow every permission at once
	Transcript  string   `json:"transcript"`             // JSONL file of Records, appended (created 0600 with its dir)
	Socket      string   `json:"socket"`                 // control socket path (unix, 0600; a stale one replaced)
	// SecretNames are environment variables (names only) whose values are replaced by "[redacted]" in the
	// transcript and the pane: an agent that prints its environment must not put a key on disk.
	SecretNames []string `json:"secret_names,omitempty"`
}

// WriteSpec writes s to path, whole, 0600: in its directory (the host's, which the box writes) and never
// through what the agent left at the name (package untrusted).
func WriteSpec(path string, s Spec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("live spec: %w", err)
	}
	if err := untrusted.New(filepath.Dir(path)).WriteFile(filepath.Base(path), b, 0o600); err != nil {
		return fmt.Errorf("write live spec: %w", err)
	}
	return nil
}

// ReadSpec reads a spec WriteSpec wrote and checks that it names an agent and its files. The file stays: a
// runner that restarts the host reuses it.
func ReadSpec(path string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read live spec: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("live spec %s: %w", path, err)
	}
	if len(s.Argv) == 0 || s.Transcript == "" || s.Socket == "" {
		return s, errors.New("live spec " + path + ": argv, transcript and socket are required")
	}
	return s, nil
}
