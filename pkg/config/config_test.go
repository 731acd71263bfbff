package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/agents"

	"github.com/BurntSushi/toml"
)

func TestExampleValidatesAndDocumentsEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "ace.toml.example")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(path, data)
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the example does not validate: %v", err)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		t.Fatal(err)
	}
	var missing []string
	walk(reflect.TypeOf(Config{}), "", func(key string) {
		if !has(raw, strings.Split(key, ".")) {
			missing = append(missing, key)
		}
	})
	if len(missing) > 0 {
		t.Fatalf("keys missing from ace.toml.example: %v", missing)
	}
}

// walk calls f with the dotted key of every leaf field; agents are checked through [agents.claude].
func walk(t reflect.Type, prefix string, f func(string)) {
	for i := 0; i < t.NumField(); i++ {
		fl := t.Field(i)
		if fl.Anonymous { // an embedded struct's keys are its table's (AgentConfig's agents.Override)
			walk(fl.Type, prefix, f)
			continue
		}
		key := strings.Split(fl.Tag.Get("toml"), ",")[0]
		full := strings.TrimPrefix(prefix+"."+key, ".")
		switch {
		case fl.Type == reflect.TypeOf(Duration{}):
			f(full)
		case fl.Type.Kind() == reflect.Struct:
			walk(fl.Type, full, f)
		case fl.Type.Kind() == reflect.Slice && fl.Type.Elem().Kind() == reflect.Struct:
			walk(fl.Type.Elem(), full, f) // an array of tables: its first entry documents the keys
		case fl.Type.Kind() == reflect.Map && fl.Type.Elem() == reflect.TypeOf(AgentConfig{}):
			walk(fl.Type.Elem(), full+".claude", f)
		case fl.Type.Kind() == reflect.Map && fl.Type.Elem() == reflect.TypeOf(RepoWorkflow{}):
			walk(fl.Type.Elem(), full+".acme/events", f)
		default:
			f(full)
		}
	}
}

func has(m map[string]any, path []string) bool {
	v, ok := m[path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	if tables, ok := v.([]map[string]any); ok && len(tables) > 0 {
		v = tables[0]
	}
	sub, ok := v.(map[string]any)
	return ok && has(sub, path[1:])
}

func TestErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"unknown", "[monitor]\ninterval = \"1s\"\nintervall = \"2s\"\n", "x.toml:3: monitor.intervall: unknown key"},
		{"duration", "[poll]\ninterval = \"soon\"\n", "x.toml:2:"},
		{"syntax", "[tmux]\nwidth = = 3\n", "x.toml:2:"},
	}
	for _, c := range cases {
		_, err := Parse("x.toml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	cfg := Default()
	cfg.Agents["mine"] = AgentConfig{Override: agents.Override{Markers: agents.MarkerOverride{Ready: "("}}}
	cfg.Monitor.Interval = D(0)
	cfg.Budget.Day.MaxCostUSD = -1
	err := cfg.Validate()
	for _, want := range []string{"agents.mine.command: empty", "agents.mine.markers.ready:", "monitor.interval: must be a positive duration",
		"budget.day.max_cost_usd: -1 is negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}

func TestDiscoveryAndEnvironment(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	cfg, path, err := Load("", getenv)
	if err != nil || path != "" || cfg.Workspace.Root != filepath.Join(home, ".local/share/ace") {
		t.Fatalf("defaults: %v %q %q", err, path, cfg.Workspace.Root)
	}
	p := filepath.Join(home, ".config", "ace", "ace.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("[poll]\nmax_concurrent = 9\n"), 0o644)
	cfg, path, err = Load("", getenv)
	if err != nil || path != p || cfg.Poll.MaxConcurrent != 9 {
		t.Fatalf("~/.config: %v %q %d", err, path, cfg.Poll.MaxConcurrent)
	}
	x := filepath.Join(home, "xdg")
	os.MkdirAll(filepath.Join(x, "ace"), 0o755)
	os.WriteFile(filepath.Join(x, "ace", "ace.toml"), []byte("[poll]\nmax_concurrent = 7\n"), 0o644)
	env["XDG_CONFIG_HOME"] = x
	env["AGENT_WORKSPACE_ROOT"] = "/srv/ace"
	cfg, _, err = Load("", getenv)
	if err != nil || cfg.Poll.MaxConcurrent != 7 || cfg.Workspace.Root != "/srv/ace" {
		t.Fatalf("XDG + env: %v %d %q", err, cfg.Poll.MaxConcurrent, cfg.Workspace.Root)
	}
	if _, _, err := Load(filepath.Join(home, "missing.toml"), getenv); err == nil {
		t.Fatal("an explicit missing file was accepted")
	}
}

func TestValidateHeadlessKeys(t *testing.T) {
	cfg := Default()
	// Built in: the headless command and format come with it.
	cfg.Agents["claude"] = AgentConfig{Override: agents.Override{Runner: "exec"}}
	cfg.Agents["mine"] = AgentConfig{Override: agents.Override{Command: "mine", Runner: "exec",
		HeadlessResume: "mine --again"}}
	cfg.Agents["odd"] = AgentConfig{Override: agents.Override{Command: "odd", HeadlessFormat: "aider"}}
	err := cfg.Validate()
	for _, want := range []string{
		"agents.mine.headless: empty (runner \"exec\" needs the headless command)",
		"agents.mine.headless_format: empty",
		"agents.mine.headless_resume: \"mine --again\" must contain {session_id}",
		"agents.odd.headless_format: \"aider\" is not",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "agents.claude") {
		t.Errorf("the built-in claude with runner exec was rejected: %v", err)
	}
}

// TestCustomAgentLivesInConfigAlone: an exec-only custom agent needs no tmux command; one with neither is
// refused with the choices.
func TestCustomAgentLivesInConfigAlone(t *testing.T) {
	cfg := Default()
	cfg.Agents["headless-only"] = AgentConfig{Override: agents.Override{Runner: "exec", Headless: "/opt/bin/agent --json",
		HeadlessFormat: "codex"}}
	cfg.Agents["nothing"] = AgentConfig{Override: agents.Override{Runner: "tmux"}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "agents.nothing.command: empty") {
		t.Errorf("an agent with no command at all: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "agents.headless-only") {
		t.Errorf("an exec-only custom agent was refused: %v", err)
	}
}

func TestStoreURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	cfg, _, err := Load("", getenv)
	if err != nil || cfg.Store.URL != "" {
		t.Fatalf("default store url %q (%v), want empty: SQLite", cfg.Store.URL, err)
	}
	file := filepath.Join(t.TempDir(), "ace.toml")
	os.WriteFile(file, []byte("[store]\nurl = \"postgres://ace@db.example:5432/ace\"\n"), 0o644)
	if cfg, _, err = Load(file, getenv); err != nil || cfg.Store.URL != "postgres://ace@db.example:5432/ace" {
		t.Fatalf("store url from the file %q (%v)", cfg.Store.URL, err)
	}
	env["ACE_STORE_URL"] = "postgresql://ace:pw@10.0.0.1/fleet?password=pw2"
	if cfg, _, err = Load(file, getenv); err != nil || cfg.Store.URL != env["ACE_STORE_URL"] {
		t.Fatalf("ACE_STORE_URL did not override the file: %q (%v)", cfg.Store.URL, err)
	}
	if r := cfg.Store.Redacted(); strings.Contains(r, "pw") || !strings.Contains(r, "10.0.0.1/fleet") {
		t.Fatalf("redacted store url %q", r)
	}
	env["ACE_STORE_URL"] = "mysql://root:hunter2@db/ace"
	_, _, err = Load(file, getenv)
	if err == nil || !strings.Contains(err.Error(), "store.url") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a non-PostgreSQL store url: %v", err)
	}
}

func TestStoreKeep(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	file := filepath.Join(t.TempDir(), "ace.toml")
	for text, want := range map[string]string{
		"":                 "720h0m0s",
		"keep = \"0s\"\n":  "0s",
		"keep = \"48h\"\n": "48h0m0s",
		"keep = \"10m\"\n": "store.keep: must be 0 (keep every run) or at least 1h, is 10m0s",
		"keep = \"-1h\"\n": "store.keep: must be 0",
		"keep = \"30d\"\n": "invalid duration",
	} {
		os.WriteFile(file, []byte("[store]\n"+text), 0o644)
		cfg, _, err := Load(file, getenv)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = cfg.Store.Keep.Duration.String()
		}
		if !strings.Contains(got, want) {
			t.Errorf("[store] %q: %s, want %s", text, got, want)
		}
	}
}

// TestAgentTable: [agents.<name>] is decoded into agents.Override, embedded; a key it does not have is rejected
// with its line, and a setting that resolving the agent rejects is named with its line.
func TestAgentTable(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[agents.claude]\nmodel = \"opus\"\nauto_approve = true\n"+
		"[agents.claude.markers]\nready = 'READY>'\n[agents.claude.sandbox]\nallow = [\"example.com:443\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Agents["claude"]; a.Model != "opus" || !a.AutoApprove || a.Markers.Ready != "READY>" ||
		len(a.Sandbox.Allow) != 1 {
		t.Errorf("[agents.claude] decoded as %+v", a)
	}
	_, err = Parse("x.toml", []byte("[agents.mine]\ncommand = \"mine\"\nmodle = \"big\"\n"))
	if err == nil || !strings.Contains(err.Error(), "x.toml:3: agents.mine.modle: unknown key") {
		t.Errorf("unknown key: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ace.toml")
	if err := os.WriteFile(path, []byte("[agents.claude]\nmodel = \"opus\"\n\n[agents.claude.markers]\nready = 'x'\nbusy = '('\n"),
		0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(path, func(k string) string { return map[string]string{"HOME": dir}[k] })
	if err == nil || !strings.Contains(err.Error(), path+":6: agents.claude.markers.busy: error parsing regexp") {
		t.Errorf("bad marker: %v", err)
	}
}

// TestExecIdleTimeoutNotBelowStuckAfter: a silent headless turn with every sign of work flat is ended at
// monitor.exec_idle_timeout; below monitor.stuck_after, ace would never get to ask a human about it. The defaults
// hold it; a file that breaks it is told where.
func TestExecIdleTimeoutNotBelowStuckAfter(t *testing.T) {
	if m := Default().Monitor; m.ExecIdleTimeout.Duration < m.StuckAfter.Duration {
		t.Errorf("default exec_idle_timeout %s is below stuck_after %s", m.ExecIdleTimeout.Duration, m.StuckAfter.Duration)
	}
	p := filepath.Join(t.TempDir(), "ace.toml")
	if err := os.WriteFile(p, []byte("[monitor]\nstuck_after = \"3m\"\nexec_idle_timeout = \"120s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(p, func(string) string { return "" })
	want := p + ":3: monitor.exec_idle_timeout: 2m0s is below monitor.stuck_after (3m0s)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load = %v, want %q", err, want)
	}
}
