package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aceworks/ace/pkg/cli"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ace": func() { os.Exit(cli.Main()) },
	})
}

// TestScripts runs the command-line scenarios in testdata/script with HOME and XDG dirs per script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("ACE_CONFIG", "")
			env.Setenv("AGENT_WORKSPACE_ROOT", filepath.Join(env.WorkDir, "root"))
			env.Setenv("NO_COLOR", "1")
			// ace doctor asks npm for the CLIs' newest releases: never the real registry from a test.
			env.Setenv("npm_config_registry", "http://127.0.0.1:9/")
			for _, k := range []string{"GITHUB_TOKEN", "GITHUB_CONTROL_API_KEY"} {
				env.Setenv(k, "")
			}
			return os.MkdirAll(home, 0o755)
		},
	})
}
