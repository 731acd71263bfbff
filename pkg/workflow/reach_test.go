package workflow

import (
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// TestReachLines: what ace show, the dashboard and the status comment say of an agent that cannot reach its
// model — where, how often its CLI retried (or how many connections failed), what was said, since when, and what
// would mend it — and nothing while it can.
func TestReachLines(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	r := &store.Run{Agent: "claude", State: store.RunState{Reach: &store.ReachState{Since: since, Retries: 7, Max: 10,
		Dest: "127.0.0.1:4000", Error: "Unable to connect to API (ConnectionRefused)"}}}
	r.State.Reach.Hint = reachHint(r.State.Reach)
	if got := ReachLine(r); got != "claude cannot reach its model (127.0.0.1:4000, 7 retries): Unable to connect to API (ConnectionRefused)" {
		t.Errorf("ReachLine = %q", got)
	}
	if got := ReachHelp(r); !strings.Contains(got, "(since ") || !strings.Contains(got, ". Nothing answers on this machine's 127.0.0.1:4000") {
		t.Errorf("ReachHelp = %q", got)
	}
	r.State.Reach = &store.ReachState{Since: since, Failed: 3, Dest: "127.0.0.1:4000", From: "ANTHROPIC_BASE_URL",
		Error: "dial tcp 127.0.0.1:4000: connect: connection refused | evil"}
	r.State.Reach.Hint = reachHint(r.State.Reach)
	row := reachRow(r)
	for _, want := range []string{"| model | claude cannot reach its model (127.0.0.1:4000, 3 failed connections)",
		"refused \\| evil", "since 2026-11-28T09:00:00Z", "Nothing answers on this machine's 127.0.0.1:4000",
		"(ANTHROPIC_BASE_URL names it.)"} {
		if !strings.Contains(row, want) {
			t.Errorf("status row lacks %q:\n%s", want, row)
		}
	}
	if strings.Count(row, "|") != 4 {
		t.Errorf("the row's cell was broken by the error's text: %s", row)
	}
	r.State.Reach = nil
	if ReachLine(r) != "" || ReachHelp(r) != "" || reachRow(r) != "" {
		t.Error("a run that reaches its model says it cannot")
	}
}

// TestUnreachableHint: what would mend a destination, by what its connection ran into.
func TestUnreachableHint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dest, err, want string }{
		{"127.0.0.1:4000", "dial tcp 127.0.0.1:4000: connect: connection refused", "nothing answers on this machine's 127.0.0.1:4000"},
		{"gateway.corp:443", "dial tcp: lookup gateway.corp: no such host", "gateway.corp does not resolve on this machine"},
		{"api.example.com:443", "dial tcp: lookup api.example.com on 10.0.0.53:53: dial udp 10.0.0.53:53: connect: network is unreachable",
			"api.example.com does not resolve on this machine"},
		{"10.1.2.3:8080", "dial tcp 10.1.2.3:8080: connect: connection refused", "10.1.2.3:8080 refuses the connection"},
		{"10.1.2.3:8080", "dial tcp 10.1.2.3:8080: i/o timeout", "this machine cannot reach 10.1.2.3:8080"},
		{"paste.example:443", "not on the allow list", `[sandbox] allow = ["paste.example:443"]`},
		{"x:1", "something else", ""},
	} {
		if got := unreachableHint(c.dest, c.err); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("unreachableHint(%s, %q) = %q, want it to say %q", c.dest, c.err, got, c.want)
		}
	}
}

// TestReachTargets: doctor tries what the configuration names, each once — the model's endpoints and an MCP
// server's — and the CLI's own API only when nothing moves its model.
func TestReachTargets(t *testing.T) {
	t.Parallel()
	prof, _ := agents.Builtin("codex")
	got := reachTargets(prof, nil)
	if len(got) != 1 || got[0].dest != "api.openai.com:443" {
		t.Errorf("nothing configured: %+v, want the CLI's API", got)
	}
	got = reachTargets(prof, []agents.Endpoint{{URL: "http://localhost:4100/v1", From: "codex's config.toml openai_base_url", Model: true},
		{URL: "https://docs.example.com/mcp", From: "codex's config.toml mcp_servers.docs.url"},
		{URL: "http://localhost:4100/v2", From: "OPENAI_BASE_URL", Model: true}})
	var dests []string
	for _, a := range got {
		dests = append(dests, a.dest+" "+a.from)
	}
	if want := "localhost:4100 codex's config.toml openai_base_url|docs.example.com:443 codex's config.toml mcp_servers.docs.url"; strings.Join(dests, "|") != want {
		t.Errorf("targets %q, want %q", strings.Join(dests, "|"), want)
	}
}
