package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// geminiSessionUsage reads gemini's chats: <gemini dir>/tmp/<project>/chats/session-*.jsonl, where <project> is
// the working copy's short name in <gemini dir>/projects.json (gemini 0.61) or the SHA-256 of its path (older
// versions, whose chats are whole session-*.json files). A chat is a log of records: a header naming the
// projectHash, messages by id (a message written again replaces its earlier version), "$set" updates (one
// may set every message at once) and "$rewindTo". Each gemini message carries its response's tokens (input
// including cached, output, cached, thoughts, tool); a message rewound away was still paid for, so it counts.
func geminiSessionUsage(dir, workdir string, since time.Time) (Usage, error) {
	var u Usage
	seen := map[string]bool{}
	for _, chats := range geminiChatDirs(dir, workdir) {
		err := filepath.WalkDir(chats, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if de.IsDir() || !strings.HasPrefix(de.Name(), "session-") || seen[path] {
				return nil
			}
			seen[path] = true
			var spent Usage
			switch {
			case strings.HasSuffix(path, ".jsonl"):
				spent, err = geminiChatLog(path, workdir, since)
			case strings.HasSuffix(path, ".json"):
				spent, err = geminiChatFile(path, workdir, since)
			default:
				return nil
			}
			if err != nil {
				return err
			}
			u.addSession(spent)
			return nil
		})
		if err != nil {
			return Usage{}, err
		}
	}
	return u, nil
}

// geminiChatDirs are the chat folders of workdir's project: by its short name, and by its hash.
func geminiChatDirs(dir, workdir string) []string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "projects.json")); err == nil {
		_ = json.Unmarshal(b, &reg) // a broken registry leaves the hashed folders
	}
	var out []string
	for _, wd := range sameDirs(workdir) {
		if id := reg.Projects[wd]; id != "" && !strings.ContainsAny(id, `/\`) && id != ".." {
			out = append(out, filepath.Join(dir, "tmp", id, "chats"))
		}
		out = append(out, filepath.Join(dir, "tmp", geminiProjectHash(wd), "chats"))
	}
	return out
}

// geminiProjectHash is gemini's hash of a project root: SHA-256 of the path, in hex.
func geminiProjectHash(workdir string) string {
	h := sha256.Sum256([]byte(workdir))
	return hex.EncodeToString(h[:])
}

// geminiRecord is one line of a chat log, or one message of a chat file.
type geminiRecord struct {
	// header
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	// message
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Timestamp string        `json:"timestamp"`
	Model     string        `json:"model"`
	Tokens    *geminiTokens `json:"tokens"`
	// update
	Set *struct {
		Messages []geminiRecord `json:"messages"`
	} `json:"$set"`
}

type geminiTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
}

// tokens maps gemini's counts onto ace's kinds: its input (promptTokenCount) includes the cached tokens, tool
// prompts are input too, thoughts are output.
func (g geminiTokens) tokens() Tokens {
	return Tokens{Input: max(g.Input-g.Cached, 0) + g.Tool, Output: g.Output + g.Thoughts, CacheRead: g.Cached}
}

// geminiChat sums the last version of each gemini message.
type geminiChat struct {
	workdir string
	since   time.Time
	other   bool // the header names another project
	byID    map[string]geminiRecord
	order   []string
}

func (c *geminiChat) message(m geminiRecord) {
	if m.ID == "" || m.Type != "gemini" || m.Tokens == nil {
		return
	}
	if _, ok := c.byID[m.ID]; !ok {
		c.order = append(c.order, m.ID)
	}
	c.byID[m.ID] = m
}

func (c *geminiChat) record(r geminiRecord) {
	switch {
	case r.ProjectHash != "" && r.ID == "":
		c.other = !slices.ContainsFunc(sameDirs(c.workdir), func(wd string) bool { return geminiProjectHash(wd) == r.ProjectHash })
	case r.Set != nil:
		for _, m := range r.Set.Messages {
			c.message(m)
		}
	default:
		c.message(r)
	}
}

func (c *geminiChat) usage() Usage {
	var u Usage
	if c.other {
		return u
	}
	for _, id := range c.order {
		m := c.byID[id]
		if !before(m.Timestamp, c.since) {
			u.add(m.Model, m.Tokens.tokens())
		}
	}
	return u
}

// geminiChatLog reads a chat log (gemini 0.61: session-*.jsonl).
func geminiChatLog(path, workdir string, since time.Time) (Usage, error) {
	c := &geminiChat{workdir: workdir, since: since, byID: map[string]geminiRecord{}}
	err := eachLine(path, func(line []byte) error {
		var r geminiRecord
		if json.Unmarshal(line, &r) == nil {
			c.record(r)
		}
		return nil
	})
	return c.usage(), err
}

// geminiChatFile reads a whole chat (older versions: session-*.json, {sessionId, projectHash, messages}).
func geminiChatFile(path, workdir string, since time.Time) (Usage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Usage{}, err
	}
	var f struct {
		ProjectHash string         `json:"projectHash"`
		Messages    []geminiRecord `json:"messages"`
	}
	if json.Unmarshal(b, &f) != nil {
		return Usage{}, nil // not a chat
	}
	c := &geminiChat{workdir: workdir, since: since, byID: map[string]geminiRecord{}}
	c.record(geminiRecord{ProjectHash: f.ProjectHash})
	for _, m := range f.Messages {
		c.message(m)
	}
	return c.usage(), nil
}
