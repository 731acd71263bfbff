package agents

// installHints maps an agent CLI's executable to the command that installs it.
// doctor and the runners print these when the executable is missing.
var installHints = map[string]string{
	"claude": "npm install -g @anthropic-ai/claude-code",
	"codex":  "npm install -g @openai/codex",
	"gemini": "npm install -g @google/gemini-cli",
	"tmux":   "apt-get install tmux   (or: brew install tmux)",
	"git":    "apt-get install git    (or: brew install git)",
}

// InstallHint returns the command that installs the named executable, or ""
// when ace does not know how it is installed.
func InstallHint(executable string) string {
	return installHints[executable]
}
