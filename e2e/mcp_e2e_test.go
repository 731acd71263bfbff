package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// asClaude makes the fake agent play claude (claude's profile: markers, .mcp.json) with a GitHub MCP server
// configured. Its command is the fake's own: no `claude` needs to be installed.
func asClaude() func(*config.Config) {
	return func(c *config.Config) {
		a := c.Agents["fake"]
		a.GitHubMCP = "http://127.0.0.1:9/mcp/"
		c.Agents["claude"] = a
		c.Agent.Default = "claude"
	}
}

// TestClaudeGetsGitHubMCPWithoutTokenOnDisk: claude's working copy gets a git-excluded .mcp.json naming the
// GitHub MCP server and the token's variable; the agent has the token in its environment; the file is never
// committed and holds no token.
func TestClaudeGetsGitHubMCPWithoutTokenOnDisk(t *testing.T) {
	t.Parallel()
	script := "sh test \"$GITHUB_TOKEN\" = \"" + botToken + "\" && echo yes > .ace/token-seen\n" + workScript
	w := newWorld(t, script, asClaude())
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	b, err := os.ReadFile(filepath.Join(r.Workdir, ".mcp.json"))
	if err != nil || !strings.Contains(string(b), "http://127.0.0.1:9/mcp/") || !strings.Contains(string(b), "${GITHUB_TOKEN}") ||
		strings.Contains(string(b), botToken) {
		t.Fatalf(".mcp.json %q (%v): want the server and the variable's name, no token", b, err)
	}
	if seen, _ := os.ReadFile(filepath.Join(r.Workdir, ".ace", "token-seen")); strings.TrimSpace(string(seen)) != "yes" {
		t.Error("the agent did not get GITHUB_TOKEN for the MCP server")
	}
	if files := gittest.Run(t, w.remote, "ls-tree", "-r", "--name-only", r.Branch); strings.Contains(files, ".mcp.json") {
		t.Fatalf("the pushed branch has .mcp.json: %s", files)
	}
}

// TestTrackedMCPConfigIsLeftAlone: a repository that tracks its .mcp.json keeps it byte for byte, and the pull
// request does not touch it.
func TestTrackedMCPConfigIsLeftAlone(t *testing.T) {
	t.Parallel()
	const tracked = "{\n  // the project's own servers\n  \"mcpServers\": {}\n}\n"
	w := newWorld(t, workScript, asClaude())
	seed := filepath.Join(w.dir, "seed")
	gittest.Run(t, w.dir, "clone", "-q", w.remote, seed)
	if err := os.WriteFile(filepath.Join(seed, ".mcp.json"), []byte(tracked), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, seed, "add", ".mcp.json")
	gittest.Run(t, seed, "commit", "-q", "-m", "project MCP servers")
	gittest.Run(t, seed, "push", "-q", "origin", "HEAD:main")

	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Workdir, ".mcp.json")); string(b) != tracked {
		t.Fatalf("tracked .mcp.json changed in the working copy: %q", b)
	}
	if got := gittest.Run(t, w.remote, "diff", "--name-only", "main", r.Branch); strings.TrimSpace(got) != "GREETING.md" {
		t.Fatalf("the branch changes %q, want only GREETING.md", got)
	}
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		found = found || e.Kind == "mcp"
	}
	if !found {
		t.Error("no event says the tracked .mcp.json was left alone")
	}
}
