package e2e_test

import (
	"sync"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
)

// TestRealCLI runs every real-CLI case of this package, each case once it holds one of the machine's real-CLI
// slots (realcli.Cases), in the order they asked for one: the groups queue their cases slowest first (a stuck
// agent is waited for by the minute), so that the last to start is not the longest. It is not parallel: the
// package's other tests run after it. Beside the real CLIs (tried: TestRealCLI parallel, its cases taking no
// -parallel place) the other tests' runs were starved on 2 cores — 3 and 16 of them past their deadlines in
// two runs, on a machine loaded besides — where after it they pass. The groups keep their names:
// `-run '^TestRealCLI$/^issue$/gemini'` runs one group's gemini cases.
func TestRealCLI(t *testing.T) {
	var q realcli.Queue
	var groups sync.WaitGroup
	for _, g := range []struct {
		name string
		run  func(*testing.T, *realcli.Cases)
	}{
		{"stuck", realCLIStuckOrSlow},
		{"follow", realCLIFollowsItsPullRequest},
		{"limits", realCLILimits},
		{"evicted", realCLIEvictedAgentResumesItsConversation},
		{"issue", realCLIs}, // realcli_e2e_test.go: an issue to a pull request, each CLI and runner
		{"unreachable", realCLIsUnreachable},
		{"gateway", realCLIBehindAGateway},
		{"live-walk", realCLILiveWalk},
		{"withdrawn", realCLIsLiveWithdrawn},
		{"sandbox", sandboxRealCLIs},
	} {
		queued := make(chan struct{})
		done := sync.OnceFunc(func() { close(queued) }) // also when -run leaves the group out
		groups.Add(1)
		go func() {
			defer groups.Done()
			defer done()
			t.Run(g.name, func(t *testing.T) {
				cs := q.Group(t)
				defer cs.Wait()
				g.run(t, cs)
				done()
			})
		}()
		<-queued // the next group's cases queue behind this one's
	}
	groups.Wait()
}
