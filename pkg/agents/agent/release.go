package agent

import (
	"strings"

	"github.com/aceworks/ace/pkg/secrets"
)

// AtProgram is the built-in profile p with each of its commands (interactive, continue, live, headless, headless
// resume) that starts the adapter's CLI by name starting program instead: a release of the CLI installed apart
// (clirelease). ok is false when p is no built-in CLI's or none of its commands starts the CLI by name (the user's
// own wrapper): it would not run that release.
func (p Profile) AtProgram(program string) (_ Profile, ok bool) {
	if p.adapter == nil || p.adapter.CLI == "" {
		return p, false
	}
	cli := p.adapter.CLI
	for _, t := range []*string{&p.Command, &p.ContinueCommand, &p.Live, &p.Headless, &p.HeadlessResume} {
		words, err := secrets.SplitCommand(*t)
		rest, starts := strings.CutPrefix(strings.TrimLeft(*t, " \t"), cli)
		if err != nil || len(words) == 0 || words[0] != cli || !starts {
			continue
		}
		*t = quoteWord(program) + rest
		ok = true
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
