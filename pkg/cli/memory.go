package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/workspace"
)

type memoryOptions struct {
	Repo string
	Yes  bool
	In   io.Reader
}

func newCmdMemory(app *App) *cobra.Command {
	var o memoryOptions
	cmd := &cobra.Command{
		Use:   "memory show|edit|clear",
		Short: "Show, edit or clear what ace remembers of a repository across runs",
		Long: `Every repository has a memory under <workspace.root>/memory/<owner>/<repo>/: status.md, one line per
finished run (written by ace), and AGENTS.md, conventions and gotchas that agents append to. Each run gets a
copy in its working copy (.ace/memory/) and what its agent adds to AGENTS.md is merged back when it ends.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&o.Repo, "repo", "", "repository `owner/name` (default: the only one configured)")
	show := &cobra.Command{
		Use: "show", Short: "Print the repository's status.md and AGENTS.md", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return memoryShow(cmd.Context(), app, o) },
	}
	edit := &cobra.Command{
		Use: "edit", Short: "Edit the repository's AGENTS.md with $VISUAL or $EDITOR", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return memoryEdit(cmd.Context(), app, o) },
	}
	clr := &cobra.Command{
		Use: "clear", Short: "Remove the repository's memory (asks first unless --yes)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.In = cmd.InOrStdin()
			return memoryClear(cmd.Context(), app, o)
		},
	}
	clr.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.AddCommand(show, edit, clr)
	return cmd
}

func openMemory(app *App, flag string) (*memory.Store, string, error) {
	repo, err := service.ConfiguredRepo(app.Config, flag)
	if err != nil {
		return nil, "", err
	}
	c := app.Config.Memory
	mem, err := memory.New(app.Config.Workspace.Root, memory.Options{AgentsMax: c.AgentsMaxBytes, StatusMax: c.StatusMaxBytes})
	if err != nil {
		return nil, "", err
	}
	if _, err := mem.Dir(repo); err != nil {
		return nil, "", &FlagError{fmt.Errorf("--repo: %w", err)}
	}
	return mem, repo, nil
}

// memoryShow prints both files. They hold agents' text: it is sanitized before it reaches the terminal.
func memoryShow(ctx context.Context, app *App, o memoryOptions) error {
	mem, repo, err := openMemory(app, o.Repo)
	if err != nil {
		return err
	}
	f, err := mem.Read(ctx, repo)
	if err != nil {
		return err
	}
	w := app.Stdout
	for _, part := range []struct{ name, text string }{{memory.StatusFile, f.Status}, {memory.AgentsFile, f.Agents}} {
		fmt.Fprintf(w, "==> %s: %s <==\n", repo, part.name)
		if strings.TrimSpace(part.text) == "" {
			fmt.Fprintln(w, "(empty)")
		} else {
			fmt.Fprint(w, strings.TrimRight(workspace.Sanitize(part.text), "\n")+"\n")
		}
		if part.name == memory.StatusFile && f.Rotated != "" {
			fmt.Fprintf(w, "(older runs are in %s)\n", memory.RotatedFile)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// memoryEdit edits a copy of AGENTS.md and puts it back under the memory's lock, so that runs ending while the
// editor is open are neither blocked nor lost.
func memoryEdit(ctx context.Context, app *App, o memoryOptions) error {
	mem, repo, err := openMemory(app, o.Repo)
	if err != nil {
		return err
	}
	editor := app.Getenv("VISUAL")
	if editor == "" {
		editor = app.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	argv, err := secrets.SplitCommand(editor)
	if err != nil || len(argv) == 0 {
		return fmt.Errorf("$VISUAL/$EDITOR %q: %w", editor, errors.Join(err, errors.New("no command")))
	}
	f, err := mem.Read(ctx, repo)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "ace-memory-*-AGENTS.md")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(f.Agents); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], tmp.Name())...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, app.Stdout, app.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %s: %w (AGENTS.md is unchanged)", argv[0], err)
	}
	edited, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	if string(edited) == f.Agents {
		fmt.Fprintln(app.Stdout, "AGENTS.md unchanged")
		return nil
	}
	if err := mem.Replace(ctx, repo, f.Agents, string(edited)); err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "saved the AGENTS.md of %s\n", repo)
	return nil
}

func memoryClear(ctx context.Context, app *App, o memoryOptions) error {
	mem, repo, err := openMemory(app, o.Repo)
	if err != nil {
		return err
	}
	if !o.Yes {
		fmt.Fprintf(app.Stdout, "Remove the memory of %s (%s, %s, %s)? [y/N] ", repo, memory.StatusFile, memory.RotatedFile, memory.AgentsFile)
		answer, _ := bufio.NewReader(o.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(app.Stdout)
			return fmt.Errorf("the memory of %s was not cleared (answer y, or pass --yes)", repo)
		}
	}
	if err := mem.Clear(ctx, repo); err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "cleared the memory of %s\n", repo)
	return nil
}
