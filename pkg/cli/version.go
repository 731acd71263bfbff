package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newCmdVersion(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print ace's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(app.Stdout, versionString())
			return nil
		},
	}
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "ace (unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := "ace " + v
	var rev, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (" + rev
		if modified == "true" {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + bi.GoVersion
}
