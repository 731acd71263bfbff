package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/headless"
)

// TestRetryOnScreen: each CLI's retry line on its real screen while its model is unreachable (testdata/real
// <cli>-<version>/51-retry.txt) is read with its attempt and error; a screen without one (the first-run screens,
// the ready composer) has none.
func TestRetryOnScreen(t *testing.T) {
	for file, want := range map[string]Retry{
		"claude-2.1.197/51-retry.txt": {Attempt: 6, Max: 10, Error: "Unable to connect to API (ConnectionRefused)"},
		"claude-2.1.331/51-retry.txt": {Attempt: 6, Max: 10, Error: "Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
		"claude-2.1.332/51-retry.txt": {Attempt: 6, Max: 10, Error: "Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
		"codex-0.169.0/51-retry.txt":  {Error: "Connection failed: error sending request"},
	} {
		cli, _, _ := strings.Cut(file, "-")
		p, _ := Builtin(cli)
		b, err := os.ReadFile(filepath.Join("testdata", "real", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := p.RetryOnScreen(string(b)); !ok || got != want {
			t.Errorf("%s: retry %+v (%v), want %+v", file, got, ok, want)
		}
	}
	others, _ := filepath.Glob(filepath.Join("testdata", "real", "*", "0*.txt"))
	for _, f := range others {
		cli, _, _ := strings.Cut(filepath.Base(filepath.Dir(f)), "-")
		p, _ := Builtin(cli)
		b, _ := os.ReadFile(f)
		if got, ok := p.RetryOnScreen(string(b)); ok {
			t.Errorf("%s: a retry where there is none: %+v", f, got)
		}
	}
}

// TestRetryInStreams: the CLIs' own retry reports as their headless streams and stderr give them (lines seen from
// the pinned releases with their model's endpoint refusing): claude's system/api_retry, codex's error events,
// gemini's stderr; each a retry event with its attempt, of its max where said.
func TestRetryInStreams(t *testing.T) {
	for _, c := range []struct {
		cli, line string
		stderr    bool
		want      headless.Event
	}{
		{cli: "claude", line: `{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2141,"error_status":null,"error":"unknown","session_id":"eb47"}`,
			want: headless.Event{Kind: headless.KindRetry, Attempt: 3, MaxAttempts: 10, Text: "no answer from the API"}},
		{cli: "claude", line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":529,"error":"overloaded","session_id":"eb47"}`,
			want: headless.Event{Kind: headless.KindRetry, Attempt: 1, MaxAttempts: 10, Text: "API error 529 (overloaded)"}},
		{cli: "codex", line: `{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: Connection refused (os error 111))"}`,
			want: headless.Event{Kind: headless.KindRetry, Attempt: 2, MaxAttempts: 5, Text: "stream disconnected before completion: Connection refused (os error 111)"}},
		{cli: "codex", line: `{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`,
			want: headless.Event{Kind: headless.KindRetry, Text: "Connection failed: error sending request"}},
		{cli: "gemini", stderr: true, line: `Attempt 4 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request`,
			want: headless.Event{Kind: headless.KindRetry, Attempt: 4, Text: "exception TypeError: fetch failed sending request"}},
	} {
		a, _ := AdapterOf(c.cli)
		p := a.Parser()
		var evs []headless.Event
		if c.stderr {
			evs = p.(headless.StderrParser).ParseStderr([]byte(c.line))
		} else {
			evs = p.Parse([]byte(c.line))
		}
		if len(evs) != 1 || evs[0] != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.cli, c.line, evs, c.want)
		}
	}
}
