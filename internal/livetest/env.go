package livetest

import (
	"context"
	"testing"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/modelserver"
)

// Env is one pinned CLI set up as the scenarios here set it up, for the tests of a program that runs the CLI
// itself (the live host): a working copy holding IN.txt, the model server playing the test's scenario, a fresh
// HOME.
type Env struct {
	CLI    realcli.CLI
	Dir    string
	Server *modelserver.Server
	Home   *realcli.Home
	// Ctx ends with the test, three minutes after it started at the latest.
	Ctx context.Context
}

// Each runs fn for every pinned version of cs.CLI, in parallel, each inside a loopback-only namespace with the
// model server playing sc (its Dir set to the working copy), and cs.Home applied to the HOME.
func (cs Case) Each(t *testing.T, sc modelserver.Scenario, fn func(t *testing.T, e Env)) {
	cs.each(t, sc, func(r *run) {
		fn(r.t, Env{CLI: r.cli, Dir: r.dir, Server: r.srv, Home: r.h, Ctx: r.ctx})
	})
}

// Billed is what srv billed for the scripted turns first..last, in the terms cs's protocol reports a turn's usage
// in (PromptOnly: cached input counted as input).
func (cs Case) Billed(srv *modelserver.Server, first, last int) live.Usage {
	var billed modelserver.Usage
	for _, q := range srv.ModelRequests() {
		if q.Turn >= first && q.Turn <= last {
			billed.Add(q.Usage)
		}
	}
	if cs.PromptOnly {
		return live.Usage{InputTokens: billed.Prompt(), OutputTokens: billed.OutputTokens}
	}
	return live.Usage{InputTokens: billed.InputTokens, OutputTokens: billed.OutputTokens,
		CachedTokens: billed.CacheReadTokens, CacheWriteTokens: billed.CacheWriteTokens}
}
