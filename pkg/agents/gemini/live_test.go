package gemini_test

import (
	"testing"

	"github.com/aceworks/ace/pkg/live/livetest"
)

var geminiCase = livetest.Gemini

func TestLiveTwoTurns(t *testing.T) { livetest.TwoTurns(t, geminiCase) }

// gemini's quota error carries no reset time.
func TestLiveLimit(t *testing.T) { livetest.Limit(t, geminiCase, false) }

// Each message sent mid-turn is a prompt of its own: three turns.
func TestLiveMidTurn(t *testing.T) { livetest.MidTurn(t, geminiCase, 3) }
func TestLiveResume(t *testing.T)  { livetest.Resume(t, geminiCase) }

func TestLiveInterrupt(t *testing.T) { livetest.Interrupt(t, geminiCase) }
func TestLiveCrash(t *testing.T)     { livetest.Crash(t, geminiCase) }
