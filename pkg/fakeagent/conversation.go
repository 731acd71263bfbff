package fakeagent

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
)

// conversation is what the fake agent keeps of its conversation in a working directory, as a real CLI does in
// its home (--sessions DIR): the prompts it was given and where its script stood after each turn. Started with
// --continue, it picks the conversation up — its earlier prompts are its history, its script goes on where it
// stopped — the way `claude --continue` does for a released run's next round.
type conversation struct {
	path    string
	History int // the prompts given before, in this conversation
	PC      int // where the script stood after the last turn
}

// openConversation starts a new conversation for workdir under dir, or with cont goes on with the last one.
func openConversation(dir, workdir string, cont bool) (*conversation, error) {
	sum := sha256.Sum256([]byte(workdir))
	c := &conversation{path: filepath.Join(dir, hex.EncodeToString(sum[:8])+".jsonl")}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if !cont {
		return c, os.WriteFile(c.path, nil, 0o600)
	}
	f, err := os.Open(c.path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var t struct {
			PC int `json:"pc"`
		}
		if json.Unmarshal(sc.Bytes(), &t) == nil {
			c.History++
			c.PC = t.PC
		}
	}
	return c, sc.Err()
}

// turn records a prompt given and where the script stands after its turn.
func (c *conversation) turn(prompt string, pc int) {
	c.History++
	b, _ := json.Marshal(map[string]any{"prompt": prompt, "pc": pc})
	f, err := os.OpenFile(c.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
}
