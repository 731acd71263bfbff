package agents

// InstallHint returns the command that installs the named executable, or "" when ace does not know how it is
// installed. doctor and the runners print it when the executable is missing.
func InstallHint(executable string) string {
	switch executable {
	case "claude":
		return "npm install -g @anthropic-ai/claude-code"
	case "codex", "codex-gh":
		return "npm install -g @openai/codex"
	case "gemini":
		return "npm install -g @google/gemini-cli"
	case "tmux":
		return "apt-get install tmux   (or: brew install tmux)"
	case "git":
		return "apt-get install git    (or: brew install git)"
	}
	return ""
}
