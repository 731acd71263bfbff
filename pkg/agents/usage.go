package agents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Tokens counts tokens by the kind a provider bills: Input read afresh (not from the prompt cache), CacheRead
// read from the cache, CacheWrite written to it, Output generated (reasoning and thoughts included). Each CLI's
// parser maps its own fields onto these: OpenAI's and Gemini's input counts include the cached part, which is
// taken out of Input here.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Add sums t2 into t.
func (t *Tokens) Add(t2 Tokens) {
	t.Input += t2.Input
	t.Output += t2.Output
	t.CacheRead += t2.CacheRead
	t.CacheWrite += t2.CacheWrite
}

// Sub is t minus t2, kind by kind.
func (t Tokens) Sub(t2 Tokens) Tokens {
	return Tokens{Input: t.Input - t2.Input, Output: t.Output - t2.Output, CacheRead: t.CacheRead - t2.CacheRead,
		CacheWrite: t.CacheWrite - t2.CacheWrite}
}

// Total is every token counted.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// Usage is what an agent's sessions in one working copy spent, from the session files the CLI keeps in its
// home. The files hold running totals: reading them again gives the same Usage, never more.
type Usage struct {
	Tokens
	// Models splits Tokens by the model that spent them (a CLI may use more than one); "" when the files do not
	// say.
	Models map[string]Tokens
	// CostUSD is the cost the files record themselves; 0 when they record none (ace prices the tokens then).
	CostUSD float64
	// Sessions counts the session files that spent something.
	Sessions int
}

// add records tokens spent by model.
func (u *Usage) add(model string, t Tokens) {
	if t == (Tokens{}) {
		return
	}
	u.Tokens.Add(t)
	if u.Models == nil {
		u.Models = map[string]Tokens{}
	}
	m := u.Models[model]
	m.Add(t)
	u.Models[model] = m
}

// addSession counts one session file's spend, if it spent anything.
func (u *Usage) addSession(spent Usage) {
	if spent.Total() == 0 {
		return
	}
	u.Sessions++
	for m, t := range spent.Models {
		u.add(m, t)
	}
}

// ErrNoSessionUsage: the agent's CLI keeps no session files ace can read (a custom agent, the fake agent).
var ErrNoSessionUsage = errors.New("agent keeps no session files ace reads usage from")

// sessionReader sums what the sessions of workdir, in the CLI config dir dir, spent at or after since (every
// record when since is zero).
type sessionReader func(dir, workdir string, since time.Time) (Usage, error)

// AgentHome is the home a run's agent uses: the isolated one PrepareHome makes under root, or the user's, where
// the agent's env (and, failing that, the user's) may move the CLI's config dir (CLAUDE_CONFIG_DIR, CODEX_HOME,
// GEMINI_CLI_HOME).
func AgentHome(p Profile, root string, user UserEnv) UserEnv {
	if p.Home == "isolated" {
		// PrepareHome points every variable that moves a config dir at the isolated home itself.
		return UserEnv{Home: isolatedHomeDir(p, root)}
	}
	return UserEnv{Home: user.Home, Getenv: func(k string) string {
		if v, ok := p.Env[k]; ok {
			return v
		}
		if user.Getenv != nil {
			return user.Getenv(k)
		}
		return ""
	}}
}

// SessionUsage sums what the agent's sessions in workdir spent at or after since (all of them when since is
// zero), read from the session files its CLI wrote under home: claude's transcripts, codex's rollouts, gemini's
// chats. Sessions of other working copies are left out. No sessions yet is a zero Usage; an agent whose CLI ace
// cannot read is ErrNoSessionUsage.
func (p Profile) SessionUsage(home UserEnv, workdir string, since time.Time) (Usage, error) {
	a := p.adapter
	if a == nil || a.sessionUsage == nil || a.configDir == nil {
		return Usage{}, ErrNoSessionUsage
	}
	dir := a.configDir(home.Home, home.Getenv)
	if dir == "" {
		return Usage{}, fmt.Errorf("%s: no home to read sessions from", p.Name)
	}
	u, err := a.sessionUsage(dir, workdir, since)
	if err != nil {
		return Usage{}, fmt.Errorf("%s sessions in %s: %w", p.Name, dir, err)
	}
	return u, nil
}

// sameDirs is workdir and, when it differs, the path it resolves to: a CLI may key its sessions by either.
func sameDirs(workdir string) []string {
	dirs := []string{filepath.Clean(workdir)}
	if real, err := filepath.EvalSymlinks(workdir); err == nil && real != dirs[0] {
		dirs = append(dirs, real)
	}
	return dirs
}

// eachLine calls fn with each line of the file at path; a line longer than bufio's limit is read whole.
func eachLine(path string, fn func(line []byte) error) error {
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

// at parses a record's RFC 3339 timestamp; ok is false when it has none or it does not parse.
func at(ts string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	return t, err == nil
}

// before reports whether a record stamped ts is older than since: records without a time count as recent.
func before(ts string, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	t, ok := at(ts)
	return ok && t.Before(since)
}
