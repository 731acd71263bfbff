package workflow

import (
	"context"
	"fmt"

	"github.com/aceworks/ace/pkg/store"
)

// Terminals is ace's tmux server as the commands that need no engine use it (ace attach, ace peek, ace clean):
// they reach the agents' sessions here, through the tmux runner, like everything else in ace.
type Terminals interface {
	HasSession(ctx context.Context, name string) (bool, error)
	Capture(ctx context.Context, name string, historyLines int) (string, error)
	AttachArgv(name string) []string
	Sessions(ctx context.Context, prefix string) ([]string, error)
	Kill(ctx context.Context, name string) error
}

// liveSession is the run's tmux session if it is there, else an error that says what to do instead.
func liveSession(ctx context.Context, t Terminals, r *store.Run) (string, error) {
	if !Describe(r).HasScreen() {
		d := Describe(r)
		return "", fmt.Errorf("%s#%d has no screen (runner %s, %s); read its transcript with: %s: %w",
			r.Repo, r.Issue, d.Name(), d.Where(r), d.Watch(r), ErrHeadless)
	}
	if r.Session == "" {
		return "", fmt.Errorf("%s#%d has no agent session (run %d is at %s): %w", r.Repo, r.Issue, r.ID, r.Step, ErrNoSession)
	}
	ok, err := t.HasSession(ctx, r.Session)
	if err != nil {
		return "", fmt.Errorf("look for session %s: %w", r.Session, err)
	}
	if !ok {
		return "", fmt.Errorf("session %s is gone (run %d is %s); its transcript: ace logs %d: %w",
			r.Session, r.ID, r.Status, r.Issue, ErrNoSession)
	}
	return r.Session, nil
}

// Peek is the run's agent's screen with historyLines of scrollback (ace peek).
func Peek(ctx context.Context, t Terminals, r *store.Run, historyLines int) (string, error) {
	name, err := liveSession(ctx, t, r)
	if err != nil {
		return "", err
	}
	return t.Capture(ctx, name, historyLines)
}

// AttachCommand is the command that puts the user's terminal on the run's agent (ace attach).
func AttachCommand(ctx context.Context, t Terminals, r *store.Run) ([]string, error) {
	name, err := liveSession(ctx, t, r)
	if err != nil {
		return nil, err
	}
	return t.AttachArgv(name), nil
}

// Orphans are ace's tmux sessions that no unfinished run owns (ace clean); with end, they are ended.
func Orphans(ctx context.Context, t Terminals, owned map[string]bool, end bool) ([]string, error) {
	sessions, err := t.Sessions(ctx, "ace-")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range sessions {
		if owned[s] {
			continue
		}
		if end {
			if err := t.Kill(ctx, s); err != nil {
				return out, fmt.Errorf("end session %s: %w", s, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
