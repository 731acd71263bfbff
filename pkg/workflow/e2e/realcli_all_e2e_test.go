package e2e_test

import "testing"

// TestRealCLI runs every real-CLI case of this package at once: each group below a parallel subtest, the cases
// of each parallel within it, all of them bounded by the machine's real-CLI slots (internal/realcli). As
// top-level tests of their own the groups ran one after another, each waiting for its slowest case before the
// next began: 545 s of the package's 680 on 2 cores with the CLIs installed, the machine at one busy core for
// most of it. The groups keep their names: `-run '^TestRealCLI$/^issue$/gemini'` runs one group's gemini cases.
func TestRealCLI(t *testing.T) {
	for _, g := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"issue", realCLIs}, // realcli_e2e_test.go: an issue to a pull request, each CLI and runner
		{"follow", realCLIFollowsItsPullRequest},
		{"limits", realCLILimits},
		{"unreachable", realCLIsUnreachable},
		{"stuck", realCLIStuckOrSlow},
		{"gateway", realCLIBehindAGateway},
		{"evicted", realCLIEvictedAgentResumesItsConversation},
		{"live-walk", realCLILiveWalk},
		{"withdrawn", realCLIsLiveWithdrawn},
		{"sandbox", sandboxRealCLIs},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t)
		})
	}
}
