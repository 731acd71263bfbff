package workflow

import (
	"context"
	"testing"

	"github.com/aceworks/ace/pkg/tracker/github"
)

// gitHubTracker is the GitHub tracker of github.com acting with token: what it lends a run (its endpoints, its
// secret) comes from the real tracker, which makes no request unless a test asks it something.
func gitHubTracker(t *testing.T, token string) Tracker {
	t.Helper()
	c, err := github.New(context.Background(), github.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
