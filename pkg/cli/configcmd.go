package cli

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/config"
)

func newCmdConfig(app *App) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show or check the configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (defaults, file, environment); secret-looking values as ***",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var b bytes.Buffer
			if app.ConfigPath != "" {
				fmt.Fprintf(&b, "# from %s\n", app.ConfigPath)
			} else {
				b.WriteString("# no config file found: defaults and environment only\n")
			}
			if err := toml.NewEncoder(&b).Encode(masked(app.Config)); err != nil {
				return err
			}
			fmt.Fprint(app.Stdout, app.Redactor.Redact(b.String()))
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a configuration file (default: the one ace would use); errors name file:line and the key",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := app.configFlag
			if len(args) == 1 {
				path = args[0]
			}
			_, used, err := config.Load(path, app.Getenv)
			if err != nil {
				return err
			}
			if used == "" {
				fmt.Fprintln(app.Stdout, "no config file found; the defaults are valid")
				return nil
			}
			fmt.Fprintf(app.Stdout, "%s: ok\n", used)
			return nil
		},
	})
	return cmd
}

var secretKey = regexp.MustCompile(`(?i)token|secret|password|passwd|api_?key|credential`)

// masked copies cfg with values of secret-looking environment variables replaced by ***, and the store URL's
// password by xxxxx.
func masked(cfg *config.Config) *config.Config {
	c := *cfg
	c.Store.URL = cfg.Store.Redacted()
	c.Agents = map[string]config.AgentConfig{}
	for name, a := range cfg.Agents {
		if a.Env != nil {
			env := map[string]string{}
			for k, v := range a.Env {
				if secretKey.MatchString(k) {
					v = "***"
				}
				env[k] = v
			}
			a.Env = env
		}
		c.Agents[name] = a
	}
	return &c
}
