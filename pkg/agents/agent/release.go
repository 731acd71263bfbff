package agent

import (
	"maps"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/secrets"
)

// AtProgram is the built-in profile p with each of its commands (interactive, continue, live, headless, headless
// resume) that starts the adapter's CLI by name starting program instead: a release of the CLI installed apart
// (clirelease). A command that starts ace's wrapper in front of the CLI (codex-gh) keeps starting it, and the
// wrapper is told to start program through the adapter's WrapperProgramVar in the profile's env. ok is false
// when p is no built-in CLI's or none of its commands starts the CLI or its wrapper (the user's own wrapper): it
// would not run that release.
func (p Profile) AtProgram(program string) (_ Profile, ok bool) {
	a := p.adapter
	if a == nil || a.CLI == "" {
		return p, false
	}
	wrapped := false
	for _, t := range []*string{&p.Command, &p.ContinueCommand, &p.Live, &p.Headless, &p.HeadlessResume} {
		words, err := secrets.SplitCommand(*t)
		if err != nil || len(words) == 0 {
			continue
		}
		if a.Wrapper != "" && a.WrapperProgramVar != "" && filepath.Base(words[0]) == a.Wrapper {
			wrapped = true
			continue
		}
		rest, starts := strings.CutPrefix(strings.TrimLeft(*t, " \t"), a.CLI)
		if words[0] != a.CLI || !starts {
			continue
		}
		*t = quoteWord(program) + rest
		ok = true
	}
	if wrapped {
		env := maps.Clone(p.Env)
		if env == nil {
			env = map[string]string{}
		}
		env[a.WrapperProgramVar] = program
		p.Env, ok = env, true
	}
	return p, ok
}

// quoteWord is s as one word of a command template (secrets.SplitCommand's).
func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
