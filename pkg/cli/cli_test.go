package cli_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/cli"
)

// TestMain lets the test binary be ace for the scripts. The tests run wider than the CPUs (testkit.Widen): the
// eval runs and the scripts wait on ace's processes most of their time.
func TestMain(m *testing.M) {
	testscript.Main(tests{m}, map[string]func(){
		"ace": func() { os.Exit(cli.Main()) },
	})
}

// tests runs the tests widened, then stops the PostgreSQL cluster they started, if any; testscript.Main calls
// Run only when the binary runs the tests, not as ace.
type tests struct{ m *testing.M }

func (t tests) Run() int {
	testkit.Widen()
	return pgtest.Main(t.m)
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
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"listen": listen},
	})
}

// listen VAR: a TCP listener on a free port of the loopback for the rest of the script (a gateway that is up,
// say), its host:port in $VAR. It accepts connections and closes them.
func listen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: listen VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ts.Defer(func() { ln.Close() })
	ts.Setenv(args[0], ln.Addr().String())
}
