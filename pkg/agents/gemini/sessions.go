package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents/agent"
	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/usage"
)

// sessionUsage reads gemini's chats: <gemini dir>/tmp/<project>/chats/session-*.jsonl, where <project> is
// the working copy's short name in <gemini dir>/projects.json (gemini 0.61) or the SHA-256 of its path (older
// versions, whose chats are whole session-*.json files). A chat is a log of records: a header naming the
// projectHash, messages by id (a message written again replaces its earlier version), "$set" updates (one
// may set every message at once) and "$rewindTo". Each gemini message carries its response's tokens (input
// including cached, output, cached, thoughts, tool); a message rewound away was still paid for, so it counts.
func sessionUsage(dir untrusted.Tree, workdir string, since time.Time) (agent.Usage, error) {
	var u agent.Usage
	seen := map[string]bool{}
	for _, chats := range chatDirs(dir, workdir) {
		err := dir.Walk(chats, func(path string, de fs.DirEntry) error {
			if de.IsDir() || !strings.HasPrefix(de.Name(), "session-") || seen[path] {
				return nil
			}
			seen[path] = true
			var spent agent.Usage
			var err error
			switch {
			case strings.HasSuffix(path, ".jsonl"):
				spent, err = chatLog(dir, path, workdir, since)
			case strings.HasSuffix(path, ".json"):
				spent, err = chatFile(dir, path, workdir, since)
			default:
				return nil
			}
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
	}
	return u, nil
}

// chatDirs are the chat folders of workdir's project in dir: by its short name, and by its hash.
func chatDirs(dir untrusted.Tree, workdir string) []string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := dir.ReadFile("projects.json", agent.SettingsMax); err == nil {
		_ = json.Unmarshal(b, &reg) // a broken (or refused) registry leaves the hashed folders
	}
	var out []string
	for _, wd := range agent.SameDirs(workdir) {
		if id := reg.Projects[wd]; id != "" && !strings.ContainsAny(id, `/\`) && id != ".." && id != "." {
			out = append(out, path.Join("tmp", id, "chats"))
		}
		out = append(out, path.Join("tmp", projectHash(wd), "chats"))
	}
	return out
}

// projectHash is gemini's hash of a project root: SHA-256 of the path, in hex.
func projectHash(workdir string) string {
	h := sha256.Sum256([]byte(workdir))
	return hex.EncodeToString(h[:])
}

// record is one line of a chat log, or one message of a chat file.
type record struct {
	// header
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	// message
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Timestamp string      `json:"timestamp"`
	Model     string      `json:"model"`
	Tokens    *chatTokens `json:"tokens"`
	// update
	Set *struct {
		Messages []record `json:"messages"`
	} `json:"$set"`
}

type chatTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
}

// tokens maps gemini's counts onto ace's kinds: its input (promptTokenCount) includes the cached tokens, tool
// prompts are input too, thoughts are output.
func (g chatTokens) tokens() usage.Usage {
	return usage.Usage{InputTokens: max(g.Input-g.Cached, 0) + g.Tool, OutputTokens: g.Output + g.Thoughts, CacheReadTokens: g.Cached}
}

// chat sums the last version of each gemini message.
type chat struct {
	workdir string
	since   time.Time
	other   bool // the header names another project
	byID    map[string]record
	order   []string
}

func (c *chat) message(m record) {
	if m.ID == "" || m.Type != "gemini" || m.Tokens == nil {
		return
	}
	if _, ok := c.byID[m.ID]; !ok {
		c.order = append(c.order, m.ID)
	}
	c.byID[m.ID] = m
}

func (c *chat) record(r record) {
	switch {
	case r.ProjectHash != "" && r.ID == "":
		c.other = !slices.ContainsFunc(agent.SameDirs(c.workdir), func(wd string) bool { return projectHash(wd) == r.ProjectHash })
	case r.Set != nil:
		for _, m := range r.Set.Messages {
			c.message(m)
		}
	default:
		c.message(r)
	}
}

func (c *chat) usage() agent.Usage {
	var u agent.Usage
	if c.other {
		return u
	}
	for _, id := range c.order {
		m := c.byID[id]
		if !agent.Before(m.Timestamp, c.since) {
			u.AddModel(m.Model, m.Tokens.tokens())
		}
	}
	return u
}

// chatLog reads the chat log rel of dir (gemini 0.61: session-*.jsonl).
func chatLog(dir untrusted.Tree, rel, workdir string, since time.Time) (agent.Usage, error) {
	c := &chat{workdir: workdir, since: since, byID: map[string]record{}}
	err := agent.EachLine(dir, rel, func(line []byte) error {
		var r record
		if json.Unmarshal(line, &r) == nil {
			c.record(r)
		}
		return nil
	})
	return c.usage(), err
}

// chatFile reads the whole chat rel of dir (older versions: session-*.json, {sessionId, projectHash, messages}).
func chatFile(dir untrusted.Tree, rel, workdir string, since time.Time) (agent.Usage, error) {
	b, err := dir.ReadFile(rel, agent.ChatFileMax)
	if err != nil {
		return agent.Usage{}, err
	}
	var f struct {
		ProjectHash string   `json:"projectHash"`
		Messages    []record `json:"messages"`
	}
	if json.Unmarshal(b, &f) != nil {
		return agent.Usage{}, nil // not a chat
	}
	c := &chat{workdir: workdir, since: since, byID: map[string]record{}}
	c.record(record{ProjectHash: f.ProjectHash})
	for _, m := range f.Messages {
		c.message(m)
	}
	return c.usage(), nil
}
