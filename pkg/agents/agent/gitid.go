package agent

import (
	"os/exec"
	"strings"
)

// GitIdentity is the name and e-mail git finds in workdir (the repository's own, else the user's global ones) as
// GIT_AUTHOR_* and GIT_COMMITTER_* variables: what lets an agent whose git cannot read the user's config (a
// box, which does not see the home; gemini's shell tool) commit as the user would. Empty when git knows none.
func GitIdentity(workdir string) map[string]string {
	env := map[string]string{}
	for _, id := range []struct{ key, author, committer string }{
		{"user.name", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"},
		{"user.email", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"},
	} {
		cmd := exec.Command("git", "config", "--get", id.key)
		cmd.Dir = workdir
		if out, err := cmd.Output(); err == nil && strings.TrimSpace(string(out)) != "" {
			env[id.author] = strings.TrimSpace(string(out))
			env[id.committer] = env[id.author]
		}
	}
	return env
}
