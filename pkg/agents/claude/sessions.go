package claude

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/usage"
)

// sessionUsage reads claude's transcripts: <config dir>/projects/<working copy, munged>/<session id>.jsonl,
// and its subagents' under <session id>/. Each API response is an assistant line whose message.usage holds
// the response's tokens (input_tokens without the cache, cache_read_input_tokens,
// cache_creation_input_tokens, output_tokens) — once per content block: a message with text and a tool call
// is two lines carrying the same usage, told apart from the next response by requestId and message.id. A
// resumed session repeats its earlier lines in a new file, so the same key is counted once across files.
// Older versions also wrote costUSD on the line; it is taken when there.
func sessionUsage(dir untrusted.Tree, workdir string, since time.Time) (agent.Usage, error) {
	type response struct {
		model string
		tok   usage.Usage
		cost  float64
	}
	seen := map[string]*response{}
	var order []string
	files := map[string]bool{}
	var u agent.Usage
	for _, d := range projectDirs(dir, workdir) {
		err := dir.Walk(d.path, func(path string, de fs.DirEntry) error {
			if de.IsDir() || !strings.HasSuffix(path, ".jsonl") {
				return nil
			}
			err := agent.EachLine(dir, path, func(line []byte) error {
				if !bytes.Contains(line, []byte(`"usage"`)) {
					return nil
				}
				var l sessionLine
				if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message.Usage == nil ||
					agent.Before(l.Timestamp, since) || (d.shared && !within(l.Cwd, workdir)) {
					return nil
				}
				tok := l.Message.Usage.tokens()
				key := l.RequestID + "\x00" + l.Message.ID
				if l.RequestID == "" && l.Message.ID == "" {
					key = path + "\x00" + strconv.Itoa(len(order)) // nothing to tell it apart: count it
				}
				r := seen[key]
				if r == nil {
					r = &response{model: l.Message.Model}
					seen[key] = r
					order = append(order, key)
				}
				// The lines of one response carry the same usage; where one was written before the stream
				// ended, the largest count of each kind is the response's.
				r.tok = usage.Usage{InputTokens: max(r.tok.InputTokens, tok.InputTokens),
					OutputTokens:     max(r.tok.OutputTokens, tok.OutputTokens),
					CacheReadTokens:  max(r.tok.CacheReadTokens, tok.CacheReadTokens),
					CacheWriteTokens: max(r.tok.CacheWriteTokens, tok.CacheWriteTokens)}
				r.cost = max(r.cost, l.CostUSD)
				files[path] = true
				return nil
			})
			if u.Refuse(err) {
				return nil
			}
			return err
		})
		if err != nil && !u.Refuse(err) {
			return agent.Usage{}, err
		}
	}
	for _, k := range order {
		r := seen[k]
		u.AddModel(r.model, r.tok)
		u.CostUSD += r.cost
	}
	u.Sessions = len(files)
	return u, nil
}

// apiUsage is a response's usage as Anthropic's API reports it, which claude writes in its transcripts and in
// its stream's result: input_tokens without the cache, the cache's reads and writes, output_tokens.
type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (a apiUsage) tokens() usage.Usage {
	return usage.Usage{InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, CacheReadTokens: a.CacheReadInputTokens,
		CacheWriteTokens: a.CacheCreationInputTokens}
}

type sessionLine struct {
	Type      string  `json:"type"`
	Timestamp string  `json:"timestamp"`
	RequestID string  `json:"requestId"`
	Cwd       string  `json:"cwd"`
	CostUSD   float64 `json:"costUSD"`
	Message   struct {
		ID    string    `json:"id"`
		Model string    `json:"model"`
		Usage *apiUsage `json:"usage"`
	} `json:"message"`
}

// projectDir is claude's directory name for a working copy: every character but ASCII letters and digits
// becomes "-" (per UTF-16 unit, as JavaScript's replace), and a name over 200 characters is cut there and
// suffixed with a hash of the path (claude 2.1's sanitizePath).
func projectDir(workdir string) string {
	var b strings.Builder
	for _, r := range workdir {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--") // a surrogate pair: two UTF-16 units
		default:
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) <= maxDirName {
		return name
	}
	// JavaScript's (h << 5) - h + unit | 0 over the path's UTF-16 units, then Math.abs(h).toString(36).
	var h int32
	for _, u := range utf16.Encode([]rune(workdir)) {
		h = h*31 + int32(u)
	}
	return name[:maxDirName] + "-" + strconv.FormatInt(abs64(int64(h)), 36)
}

const maxDirName = 200

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// transcriptDir is a directory of claude's transcripts; shared is set when its name alone does not prove it is
// the working copy's (a long name cut to the same prefix), so its lines are checked by their cwd.
type transcriptDir struct {
	path   string
	shared bool
}

// projectDirs are the directories of dir that may hold the working copy's transcripts, as claude itself looks
// them up: the exact name and, for a long one, every directory with the same cut prefix.
func projectDirs(dir untrusted.Tree, workdir string) []transcriptDir {
	const projects = "projects"
	var out []transcriptDir
	seen := map[string]bool{}
	for _, wd := range agent.SameDirs(workdir) {
		name := projectDir(wd)
		if !seen[name] {
			seen[name] = true
			out = append(out, transcriptDir{path: path.Join(projects, name)})
		}
		if len(name) <= maxDirName {
			continue
		}
		prefix := name[:maxDirName] + "-"
		entries, _ := dir.ReadDir(projects)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, transcriptDir{path: path.Join(projects, e.Name()), shared: true})
			}
		}
	}
	return out
}

// within reports whether dir is workdir or inside it.
func within(dir, workdir string) bool {
	if dir == "" {
		return false
	}
	for _, wd := range agent.SameDirs(workdir) {
		if rel, err := filepath.Rel(wd, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}
