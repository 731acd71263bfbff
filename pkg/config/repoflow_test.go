package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseWorkflowGoodFile(t *testing.T) {
	t.Parallel()
	data := `agent = "claude"
setup = ["npm ci", ["sh", "-c", "echo 'a b'"]]
verify = "make test"
verify_timeout = "90s"
template = "Issue {{.Number}}: {{.Title}}"
labels = ["from-ace"]
[env]
CI = "1"
[pr]
max_rounds = 5
`
	w, err := ParseWorkflow(WorkflowFile, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if w.Agent != "claude" || len(w.Setup) != 2 || !slices.Equal(w.Setup[0], []string{"npm", "ci"}) ||
		!slices.Equal(w.Setup[1], []string{"sh", "-c", "echo 'a b'"}) || !slices.Equal(w.Verify, []string{"make", "test"}) ||
		w.VerifyTimeout.Duration != 90*time.Second || w.Env["CI"] != "1" || w.PR.MaxRounds != 5 || w.Labels[0] != "from-ace" {
		t.Fatalf("parsed %+v", w)
	}
	cfg := Default()
	merged, err := cfg.Workflow("acme/x", w)
	if err != nil {
		t.Fatal(err)
	}
	if merged.SetupTimeout.Duration != DefaultSetupTimeout || merged.VerifyTimeout.Duration != 90*time.Second {
		t.Fatalf("defaults not filled: %+v", merged)
	}
}

func TestParseWorkflowErrorsCarryLineAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, data, want string }{
		{"unknown key", "verify = \"make test\"\nverify_timout = \"1m\"\n", ".ace/workflow.toml:2: verify_timout: unknown key"},
		{"unknown nested key", "[pr]\nmax_rounds = 2\ndraft = true\n", ".ace/workflow.toml:3: pr.draft: unknown key"},
		{"bad type", "agent = \"claude\"\nverify_timeout = 30\n", ".ace/workflow.toml:2:"},
		{"bad command", "setup = [\"ok\", 3]\n", ".ace/workflow.toml:1:"},
		{"bad duration", "\n\nsetup_timeout = \"soon\"\n", ".ace/workflow.toml:3:"},
		{"bad template", "verify = \"true\"\ntemplate = \"{{.Title\"\n", ".ace/workflow.toml:2: template:"},
		{"env file outside", "[[env_files]]\npath = \"../x\"\nsecrets = [\"A\"]\n", ".ace/workflow.toml:2: env_files.path:"},
		{"syntax", "verify = = 1\n", ".ace/workflow.toml:1:"},
	}
	for _, c := range cases {
		_, err := ParseWorkflow(WorkflowFile, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestWorkflowPerRepoOverride(t *testing.T) {
	t.Parallel()
	data := `
[repos."acme/x"]
verify = ["go", "test", "./..."]
secrets = ["DB_URL"]
[repos."acme/x".env]
B = "ace"
[repos."acme/x".pr]
max_rounds = 1
`
	cfg, err := Parse("ace.toml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	file, err := ParseWorkflow(WorkflowFile, []byte("verify = \"make test\"\nsetup = [\"npm ci\"]\n[env]\nA = \"file\"\nB = \"file\"\n[[env_files]]\npath = \".env\"\nsecrets = [\"DB_URL\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := cfg.Workflow("acme/x", file)
	if err != nil {
		t.Fatal(err)
	}
	if w.Verify.String() != "go test ./..." || w.Setup[0].String() != "npm ci" || w.Env["A"] != "file" || w.Env["B"] != "ace" ||
		w.PR.MaxRounds != 1 {
		t.Fatalf("merged %+v", w)
	}
	// Another repository's file cannot ask for a secret it was not granted.
	if _, err := cfg.Workflow("acme/other", file); err == nil || !strings.Contains(err.Error(), `secret "DB_URL" is not granted`) {
		t.Fatalf("ungranted secret: %v", err)
	}
	if w, _ := cfg.Workflow("acme/none", nil); w.PR.MaxRounds != cfg.PR.MaxRounds || w.Verify != nil {
		t.Fatalf("no file, no table: %+v", w)
	}
	// ace.toml's tables are checked like the file, with their key.
	_, err = Parse("ace.toml", []byte("[repos.\"acme/x\"]\nverify = \"make\"\nverifyy = 1\n"))
	if err == nil || !strings.Contains(err.Error(), `ace.toml:3: repos."acme/x".verifyy: unknown key`) {
		t.Fatalf("unknown key in a repos table: %v", err)
	}
}
