package testkit

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Child plays one or more programs in a test binary that a test started again: args are the binary's arguments
// (os.Args[1:]); ok says they named one of its programs, and code is that program's exit code. cli.Child is one:
// the tmux launcher, the headless supervisor, the fake agent.
type Child func(args []string) (code int, ok bool)

// Main is the body of a TestMain whose test binary is also the programs its tests start: when the binary was
// started as one of children's programs it runs that program and returns its exit code; otherwise it runs the
// tests with run (m.Run when run is nil: pgtest.Main is another) and returns their code. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m, nil, cli.Child, testkit.As("ace", cli.Main))) }
func Main(m *testing.M, run func(*testing.M) int, children ...Child) int {
	for _, child := range children {
		if code, ok := child(os.Args[1:]); ok {
			return code
		}
	}
	if run == nil {
		return m.Run()
	}
	return run(m)
}

// Commands is a Child playing programs by name: the first argument picks one, which gets the others.
func Commands(programs map[string]func(args []string) int) Child {
	return func(args []string) (int, bool) {
		if len(args) == 0 {
			return 0, false
		}
		main, ok := programs[args[0]]
		if !ok {
			return 0, false
		}
		return main(args[1:]), true
	}
}

// As is a Child playing a whole program, main, under a name: a test runs `<test binary> name <arguments>`, and
// main sees os.Args as `<test binary> <arguments>`. os.Args[0] stays this binary's path, so that what main starts
// again in its turn (ace's tmux panes) runs this binary, never another program of that name on PATH.
func As(name string, main func() int) Child {
	return func(args []string) (int, bool) {
		if len(args) == 0 || args[0] != name {
			return 0, false
		}
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		os.Args = append([]string{exe}, args[1:]...)
		return main(), true
	}
}

// Widen makes the tests about to run (call it in TestMain, before m.Run) run more at once than there are CPUs,
// go test's default: tests that spend most of their time waiting — on agents, tmux, git, a fleet's timers —
// left the CPUs idle while they waited two at a time. An explicit -test.parallel is left as it is.
func Widen() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(24, 8*runtime.GOMAXPROCS(0))))
	}
}
