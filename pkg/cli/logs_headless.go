package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// runHeadlessLogs prints a headless run's JSONL transcript: readable (who said what, one line per tool call
// and result, token totals at the end) or, with asJSON, as the typed events one per line.
func runHeadlessLogs(ctx context.Context, app *App, r *store.Run, follow, asJSON bool) error {
	path, format, ok := workflow.Transcript(r)
	if !ok {
		return fmt.Errorf("%s#%d has no transcript yet (run %d is at %s)", r.Repo, r.Issue, r.ID, r.Step)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("transcript of %s#%d: %w", r.Repo, r.Issue, err)
	}
	defer f.Close()
	s, err := agents.Parsers().NewStream(format)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(app.Stdout)
	emit := func(evs []headless.Event) error {
		for _, e := range evs {
			var err error
			if asJSON {
				err = enc.Encode(e)
			} else {
				err = headless.Render(app.Stdout, e)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, 64<<10)
	readAll := func() error {
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if err := emit(s.Feed(buf[:n])); err != nil {
					return err
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	if err := readAll(); err != nil {
		return err
	}
	if follow {
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
	loop:
		for {
			select {
			case <-ctx.Done():
				if !errors.Is(ctx.Err(), context.Canceled) {
					return ctx.Err()
				}
				break loop
			case <-t.C:
				if err := readAll(); err != nil {
					return err
				}
			}
		}
	}
	if err := emit(s.Close()); err != nil {
		return err
	}
	if asJSON {
		return nil
	}
	return headless.RenderTotals(app.Stdout, &s.T)
}

// noScreen is the answer of the commands that need a screen (peek, attach) for a run whose agent has none.
func noScreen(r *store.Run, verb string) error {
	d := workflow.Describe(r)
	return fmt.Errorf("%s#%d has no screen to %s (runner %s, %s); read its transcript with: %s",
		r.Repo, r.Issue, verb, d.Name(), d.Where(r), d.Watch(r))
}

// sessionLabel names where a run's agent lives, for messages.
func sessionLabel(r *store.Run) string { return workflow.Describe(r).Where(r) }
