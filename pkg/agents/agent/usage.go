package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aceworks/ace/pkg/untrusted"
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
	// Refused are the session files ace would not read (untrusted.Refusal): their spend is not counted.
	Refused []error
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
	tree := untrusted.New(dir)
	if home.Box {
		rel, err := filepath.Rel(home.Home, dir)
		if err != nil || !filepath.IsLocal(rel) {
			return Usage{}, fmt.Errorf("%s: its config dir %s is not in the run's home", p.Name, dir)
		}
		tree = untrusted.New(home.Home).Sub(rel)
	}
	u, err := a.SessionUsage(tree, workdir, since)
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

// Bounds of the session files ace reads (the CLI wrote them, and so could the agent): a long run's transcript
// is tens of megabytes, and one of its lines — a response, a tool's result — a few.
const (
	SessionFileMax = 256 << 20
	SessionLineMax = 16 << 20
	// ChatFileMax bounds a session file read whole (gemini's older chat files).
	ChatFileMax = 64 << 20
)

// EachLine calls fn with each line of the file rel of dir (a regular file of at most SessionFileMax); a line
// over SessionLineMax is skipped. fn must not keep line. A file ace refuses is an untrusted.Refusal.
func EachLine(dir untrusted.Tree, rel string, fn func(line []byte) error) error {
	f, err := dir.Open(rel, SessionFileMax)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Lines(SessionLineMax, fn)
}

// Refuse records a session file ace would not read and reports whether err was such a refusal (the reader goes
// on with the other files); any other error is the reader's.
func (u *Usage) Refuse(err error) bool {
	if _, ok := untrusted.IsRefusal(err); !ok {
		return false
	}
	u.Refused = append(u.Refused, err)
	return true
}

// Before reports whether a record stamped ts is older than since: records without a time count as recent.
func Before(ts string, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	return err == nil && t.Before(since)
}
