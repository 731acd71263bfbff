package cli

import (
	"fmt"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// noScreen is the answer of the commands that need a screen (peek, attach) for a run whose agent has none.
func noScreen(r *store.Run, verb string) error {
	d := workflow.Describe(r)
	return fmt.Errorf("%s#%d has no screen to %s (runner %s, %s); read its transcript with: %s",
		r.Repo, r.Issue, verb, d.Name(), d.Where(r), d.Watch(r))
}

// sessionLabel names where a run's agent lives, for messages.
func sessionLabel(r *store.Run) string { return workflow.Describe(r).Where(r) }
