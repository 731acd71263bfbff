package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdLogs(app *App) *cobra.Command {
	var repo string
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "logs N",
		Short: "Print the agent's transcript (-f to follow, --json for a headless run's typed events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := issueArg(args[0])
			if err != nil {
				return err
			}
			return runLogs(cmd.Context(), app, repo, n, follow, asJSON)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository `owner/name` when issue N exists in several")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing as the transcript grows (Ctrl-C to stop)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "headless runs: print the typed events as JSON lines")
	return cmd
}

func runLogs(ctx context.Context, app *App, repo string, n int, follow, asJSON bool) error {
	st, r, err := app.findRun(ctx, repo, n)
	if err != nil {
		return err
	}
	st.Close()
	if !workflow.Describe(r).HasScreen() {
		return runHeadlessLogs(ctx, app, r, follow, asJSON) // its transcript is the agent's event stream
	}
	if asJSON {
		return flagErrorf("--json: %s#%d runs in tmux; its transcript is a terminal log, not typed events", r.Repo, n)
	}
	if r.Session == "" {
		return fmt.Errorf("%s#%d has no transcript yet (run %d is at %s)", r.Repo, n, r.ID, r.Step)
	}
	path := filepath.Join(app.Config.Workspace.Root, "logs", r.Session+".log")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("transcript of %s#%d: %w", r.Repo, n, err)
	}
	defer f.Close()
	out := &ansiStripper{w: app.Stdout}
	if _, err := io.Copy(out, f); err != nil {
		return err
	}
	out.flush()
	if !follow {
		return nil
	}
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-t.C:
			if _, err := io.Copy(out, f); err != nil {
				return err
			}
			out.flush()
		}
	}
}

// ansiStripper writes a raw terminal transcript as text: escape sequences removed, carriage returns turned into
// line ends. It holds back an incomplete trailing line so that a sequence split across reads is still removed.
type ansiStripper struct {
	w       io.Writer
	pending []byte
}

func (a *ansiStripper) Write(p []byte) (int, error) {
	a.pending = append(a.pending, p...)
	i := bytes.LastIndexByte(a.pending, '\n')
	if i < 0 {
		return len(p), nil
	}
	if err := a.emit(a.pending[:i+1]); err != nil {
		return 0, err
	}
	a.pending = append([]byte(nil), a.pending[i+1:]...)
	return len(p), nil
}

func (a *ansiStripper) flush() {
	if len(a.pending) > 0 {
		_ = a.emit(a.pending)
		a.pending = nil
	}
}

func (a *ansiStripper) emit(b []byte) error {
	s := tmuxops.StripANSI(string(b))
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	_, err := io.WriteString(a.w, s)
	return err
}
