package claude_test

import (
	"testing"

	"github.com/aceworks/ace/pkg/live/livetest"
)

var claudeCase = livetest.Claude

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, claudeCase) }
func TestLiveQuestion(t *testing.T) { livetest.Question(t, claudeCase) }
func TestLiveLimit(t *testing.T)    { livetest.Limit(t, claudeCase, true) }

// The messages sent mid-turn start the next turn together: two turns.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, claudeCase, 2) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, claudeCase) }

func TestLiveInterrupt(t *testing.T)         { livetest.Interrupt(t, claudeCase) }
func TestLiveCrash(t *testing.T)             { livetest.Crash(t, claudeCase) }
func TestLiveInterruptQuestion(t *testing.T) { livetest.InterruptQuestion(t, claudeCase) }
