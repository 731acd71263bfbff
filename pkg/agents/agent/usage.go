package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aceworks/ace/pkg/usage"
)

// Usage is what an agent's sessions in one working copy spent, from the session files the CLI keeps in its
// home. The files hold running totals: reading them again gives the same Usage, never more.
type Usage struct {
	// Usage is every token of the sessions; its CostUSD is the cost the files record themselves, 0 when they
	// record none (ace prices the tokens then).
	usage.Usage
	// Models splits the tokens by the model that spent them (a CLI may use more than one); "" when the files do
	// not say.
	Models map[string]usage.Usage
	// Sessions counts the session files that spent something.
	Sessions int
}

// AddModel records tokens spent by model.
func (u *Usage) AddModel(model string, t usage.Usage) {
	if t == (usage.Usage{}) {
		return
	}
	u.Add(t)
	if u.Models == nil {
		u.Models = map[string]usage.Usage{}
	}
	m := u.Models[model]
	m.Add(t)
	u.Models[model] = m
}

// AddSession counts one session file's spend, if it spent anything.
func (u *Usage) AddSession(spent Usage) {
	if spent.Tokens() == 0 {
		return
	}
	u.Sessions++
	for m, t := range spent.Models {
		u.AddModel(m, t)
	}
}

// ErrNoSessionUsage: the agent's CLI keeps no session files ace can read (a custom agent, the fake agent).
var ErrNoSessionUsage = errors.New("agent keeps no session files ace reads usage from")

// SessionUsage sums what the agent's sessions in workdir spent at or after since (all of them when since is
// zero), read from the session files its CLI wrote under home: claude's transcripts, codex's rollouts, gemini's
// chats. Sessions of other working copies are left out. No sessions yet is a zero Usage; an agent whose CLI ace
// cannot read is ErrNoSessionUsage.
func (p Profile) SessionUsage(home UserEnv, workdir string, since time.Time) (Usage, error) {
	a := p.adapter
	if a == nil || a.SessionUsage == nil || a.ConfigDir == nil {
		return Usage{}, ErrNoSessionUsage
	}
	dir := a.ConfigDir(home.Home, home.Getenv)
	if dir == "" {
		return Usage{}, fmt.Errorf("%s: no home to read sessions from", p.Name)
	}
	u, err := a.SessionUsage(dir, workdir, since)
	if err != nil {
		return Usage{}, fmt.Errorf("%s sessions in %s: %w", p.Name, dir, err)
	}
	return u, nil
}

// SameDirs is workdir and, when it differs, the path it resolves to: a CLI may key its sessions by either.
func SameDirs(workdir string) []string {
	dirs := []string{filepath.Clean(workdir)}
	if real, err := filepath.EvalSymlinks(workdir); err == nil && real != dirs[0] {
		dirs = append(dirs, real)
	}
	return dirs
}

// EachLine calls fn with each line of the file at path; a line longer than bufio's limit is read whole.
func EachLine(path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Before reports whether a record stamped ts is older than since: records without a time count as recent.
func Before(ts string, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	return err == nil && t.Before(since)
}
