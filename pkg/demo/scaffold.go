package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/aceworks/ace/pkg/store"
)

// The issue the demo asks the agent to resolve.
const (
	issueTitle = "Greet visitors in hello.txt"
	issueBody  = "Please add a file `hello.txt` at the top of the repository that says `Hello from ace!`.\n\n" +
		"Done means: the file exists on a branch, committed, with a pull request that closes this issue.\n"
)

// agentScript is what the fake agent does with each prompt. The first: the work a real agent would do for the
// issue (it forgets the repository's rule that README.md lists every file), then the done protocol of ACE_TASK.md.
// The second is the follow-up round after CI failed on that: it reads .ace/FOLLOWUP.md and fixes what CI said.
const agentScript = `# The fake agent's script for ace demo: one turn per submitted prompt.
busy 1s
say Reading ACE_TASK.md: add hello.txt saying "Hello from ace!"
write hello.txt Hello from ace!\n
busy 500ms
sh git add hello.txt && git commit -q -m "Add hello.txt greeting (#1)"
say Committed hello.txt.
done Added hello.txt with the greeting "Hello from ace!".
# Follow-up round 1: CI failed on the pull request; ace put its output in .ace/FOLLOWUP.md.
busy 500ms
sh grep -m1 "does not list" .ace/FOLLOWUP.md
append README.md - hello.txt: the greeting\n
sh git commit -q -am "List hello.txt in README.md (#1)"
say Listed hello.txt in README.md, as CI asks.
done Listed hello.txt in README.md, which CI asked for.
`

// ciScript is the demo repository's CI, run by ace demo on each new head of a pull request: every file must be
// listed in README.md.
const ciScript = `# CI of the demo repository: ace demo runs it on every push to a pull request.
# Each file of the repository is listed in README.md under "## Files".
status=0
for f in *; do
	[ "$f" = README.md ] && continue
	if ! grep -qF -- "- $f:" README.md; then
		echo "README.md does not list $f: add a line \"- $f: <what it is>\" under \"## Files\""
		status=1
	fi
done
[ "$status" -eq 0 ] && echo "README.md lists every file"
exit "$status"
`

// scaffold creates the demo's world under dir — a bare remote with one commit, a local tracker with one
// labelled issue, the fake agent's script and an ace.toml tying them together — and returns the config path.
func scaffold(ctx context.Context, dir, exe string, headless bool) (string, error) {
	for _, d := range []string{"seed", "tracker/issues", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	remote := filepath.Join(dir, "remote.git")
	if _, err := git(ctx, dir, "init", "-q", "--bare", "-b", "main", remote); err != nil {
		return "", err
	}
	seed := filepath.Join(dir, "seed")
	files := map[string]string{
		"README.md": "# hello\n\nA tiny repository for `ace demo`.\n\n## Files\n\n- ci.sh: the check CI runs on every pull request\n",
		"ci.sh":     ciScript,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(seed, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=ace demo", "-c", "user.email=demo@ace.invalid", "commit", "-q", "-m", "Initial commit"},
		{"push", "-q", remote, "main"},
	} {
		if _, err := git(ctx, seed, args...); err != nil {
			return "", err
		}
	}
	tr := filepath.Join(dir, "tracker")
	repoTOML := fmt.Sprintf("name = %s\nremote = %s\ndefault_branch = \"main\"\n", strconv.Quote(Repo), strconv.Quote(remote))
	if err := os.WriteFile(filepath.Join(tr, "repo.toml"), []byte(repoTOML), 0o644); err != nil {
		return "", err
	}
	issue := fmt.Sprintf("+++\ntitle = %s\nlabels = [\"ace\"]\nstate = \"open\"\nauthor = \"you\"\nlabeled_by = \"you\"\n+++\n%s",
		strconv.Quote(issueTitle), issueBody)
	if err := os.WriteFile(filepath.Join(tr, "issues", strconv.Itoa(Issue)+".md"), []byte(issue), 0o644); err != nil {
		return "", err
	}
	script := filepath.Join(dir, "agent-script.txt")
	if err := os.WriteFile(script, []byte(agentScript), 0o644); err != nil {
		return "", err
	}
	cfg := map[string]any{
		"workspace": map[string]any{"root": filepath.Join(dir, "root")},
		"tracker":   map[string]any{"kind": "local", "path": tr},
		"agent":     map[string]any{"default": "fake"},
		"agents": map[string]any{"fake": map[string]any{
			"command": shellQuote(exe) + " demo-agent --script " + shellQuote(script) + " --splash 500ms",
			// The fake agent commits with git: give it an identity even on a machine that has none.
			"env": map[string]string{"GIT_AUTHOR_NAME": "fake agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
				"GIT_COMMITTER_NAME": "fake agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
		}},
		"tmux":    map[string]any{"socket": "ace-demo-" + strconv.Itoa(os.Getpid()), "startup_timeout": "30s", "enter_delay": "150ms"},
		"monitor": map[string]any{"interval": "250ms", "idle_after": "15s", "timeout": "90s"},
		// ace follows the pull request until it is merged.
		"pr": map[string]any{"draft": false, "follow": true},
		// Boxed where boxes work: the fake agent sees its script, its working copy and its home, nothing else.
		"sandbox": map[string]any{"read_only": []string{script}},
	}
	if headless {
		fake := cfg["agents"].(map[string]any)["fake"].(map[string]any)
		// Its place in the script is kept in the working copy (git-excluded .ace/): a box sees the script read-only.
		base := shellQuote(exe) + " demo-agent headless --format claude --script " + shellQuote(script) + " --state .ace/demo-agent.state"
		fake["runner"] = store.RunnerExec
		fake["headless"] = base
		fake["headless_resume"] = base + " --resume {session_id}"
		fake["headless_format"] = "claude"
		cfg["monitor"].(map[string]any)["exec_idle_timeout"] = "30s"
		cfg["monitor"].(map[string]any)["stuck_after"] = "30s" // exec_idle_timeout may not be below it
		cfg["monitor"].(map[string]any)["exec_turn_timeout"] = "60s"
	}
	var buf bytes.Buffer
	buf.WriteString("# Written by `ace demo`: a local remote, a local tracker and the scripted fake agent.\n")
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return "", fmt.Errorf("encode the demo config: %w", err)
	}
	path := filepath.Join(dir, "ace.toml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// shellQuote quotes s for the command template's shell-like splitting (the template is split, never run by a shell).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
