package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/clirelease"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/service"
)

func newCmdAgentsInstall(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "install NAME@VERSION...",
		Short: "Install a release of an agent CLI under ace's root, for ace eval to run (claude@2.1.331)",
		Long: `Install puts each named release of a built-in agent's CLI into a directory of its own under ace's root,
<workspace.root>/clis/NAME@VERSION: npm install --prefix into a temporary directory, renamed into place once whole
(never your global install, nor your PATH). ace eval run --agents NAME@VERSION runs it. A release there already
is left as it is.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := eval.ParseAgents(strings.Join(args, ","))
			if err != nil {
				return &FlagError{err}
			}
			for _, a := range specs {
				prof, err := service.Profile(app.Config, a.Name)
				if err != nil {
					return &FlagError{err}
				}
				ad := prof.Adapter()
				switch {
				case a.Version == "":
					return flagErrorf("%s: name the release, %s@VERSION", a, a.Name)
				case ad == nil || ad.Package == "":
					return flagErrorf("%s: %s is no CLI ace installs from npm (claude, codex, gemini)", a, a.Name)
				}
				dir := clirelease.Dir(app.Config.Workspace.Root, a.Name, a.Version)
				rel, err := clirelease.Installer{}.Install(cmd.Context(), dir, ad.Package, ad.CLI, a.Version)
				if err != nil {
					return err
				}
				fmt.Fprintf(app.Stdout, "%s: %s %s in %s\n", a, rel.Package, rel.Version, rel.Program)
			}
			return nil
		},
	}
}
