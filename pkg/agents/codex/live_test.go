package codex_test

import (
	"testing"

	"github.com/aceworks/ace/pkg/live/livetest"
)

var codexCase = livetest.Codex

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, codexCase) }

// request_user_input, on in the default mode (LiveArgs), asks with its options.
func TestLiveQuestion(t *testing.T) { livetest.Question(t, codexCase) }
func TestLiveLimit(t *testing.T)    { livetest.Limit(t, codexCase, true) }

// The messages sent mid-turn start the next turn together: two turns.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, codexCase, 2) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, codexCase) }

func TestLiveInterrupt(t *testing.T)         { livetest.Interrupt(t, codexCase) }
func TestLiveCrash(t *testing.T)             { livetest.Crash(t, codexCase) }
func TestLiveInterruptQuestion(t *testing.T) { livetest.InterruptQuestion(t, codexCase) }
