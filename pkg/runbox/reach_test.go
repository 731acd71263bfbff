package runbox

import (
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"
)

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
		if got := UnreachableHint(c.dest, c.err); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("UnreachableHint(%s, %q) = %q, want it to say %q", c.dest, c.err, got, c.want)
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
