package codex

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/usage"
)

// sessionUsage reads codex's rollouts: <CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, one per
// thread (a subagent's thread has its own). The first line, session_meta, names the thread's cwd; token_count
// events carry the thread's running total (info.total_token_usage: input_tokens including cached_input_tokens,
// output_tokens including reasoning). codex repeats a token_count without new usage (rate-limit updates), so
// what a thread spent since a moment is its last total minus the last total before it, each step charged to
// the model of the turn (turn_context) it happened in.
func sessionUsage(dir untrusted.Tree, workdir string, since time.Time) (agent.Usage, error) {
	const root = "sessions"
	// Day folders are named in local time: one day of slack covers any zone.
	oldest := ""
	if !since.IsZero() {
		oldest = since.Add(-24 * time.Hour).Format("2006/01/02")
	}
	var u agent.Usage
	err := dir.Walk(root, func(path string, de fs.DirEntry) error {
		rel := strings.TrimPrefix(path, root+"/")
		if de.IsDir() {
			// Skip a year, month or day folder wholly older than the oldest day wanted.
			if oldest != "" && len(rel) <= len(oldest) && rel < oldest[:len(rel)] {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(de.Name(), "rollout-") || !strings.HasSuffix(de.Name(), ".jsonl") {
			return nil
		}
		spent, err := rollout(dir, path, workdir, since)
		if u.Refuse(err) {
			return nil
		}
		if err != nil {
			return err
		}
		u.AddSession(spent)
		return nil
	})
	if err != nil && !u.Refuse(err) {
		return agent.Usage{}, err
	}
	return u, nil
}

// rollout is what the rollout path of dir spent since, when its thread ran in workdir.
func rollout(dir untrusted.Tree, path, workdir string, since time.Time) (agent.Usage, error) {
	var (
		u          agent.Usage
		mine, meta bool
		model      string
		last       usage.Usage
	)
	errOther := errors.New("another working copy")
	err := agent.EachLine(dir, path, func(line []byte) error {
		var l rolloutLine
		if json.Unmarshal(line, &l) != nil {
			return nil
		}
		switch l.Type {
		case "session_meta":
			if !meta {
				meta = true
				mine = l.Payload.Cwd != "" && sameDir(l.Payload.Cwd, workdir)
			}
			if !mine {
				return errOther
			}
		case "turn_context":
			if l.Payload.Model != "" {
				model = l.Payload.Model
			}
		case "event_msg":
			if !mine || l.Payload.Type != "token_count" || l.Payload.Info == nil || l.Payload.Info.Total == nil {
				return nil
			}
			t := l.Payload.Info.Total.tokens()
			d := t.Sub(last)
			if d.InputTokens < 0 || d.OutputTokens < 0 || d.CacheReadTokens < 0 || d.CacheWriteTokens < 0 {
				d = t // the total started again
			}
			if !agent.Before(l.Timestamp, since) {
				u.AddModel(model, d)
			}
			last = t
		}
		return nil
	})
	if errors.Is(err, errOther) {
		return agent.Usage{}, nil
	}
	return u, err
}

type rolloutLine struct {
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Payload   struct {
		Type  string `json:"type"`
		Cwd   string `json:"cwd"`
		Model string `json:"model"`
		Info  *struct {
			Total *rolloutTokens `json:"total_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

type rolloutTokens struct {
	InputTokens     int64 `json:"input_tokens"`
	CachedInput     int64 `json:"cached_input_tokens"`
	CacheWriteInput int64 `json:"cache_write_input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
}

// tokens maps codex's counts onto ace's kinds: its input_tokens include the cached ones (and any cache
// writes), its output_tokens the reasoning ones.
func (c rolloutTokens) tokens() usage.Usage {
	return usage.Usage{InputTokens: max(c.InputTokens-c.CachedInput-c.CacheWriteInput, 0), OutputTokens: c.OutputTokens,
		CacheReadTokens: c.CachedInput, CacheWriteTokens: c.CacheWriteInput}
}

// sameDir reports whether dir is workdir (or the path workdir resolves to).
func sameDir(dir, workdir string) bool {
	for _, wd := range agent.SameDirs(workdir) {
		if filepath.Clean(dir) == wd {
			return true
		}
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		for _, wd := range agent.SameDirs(workdir) {
			if real == wd {
				return true
			}
		}
	}
	return false
}
