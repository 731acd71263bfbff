package gemini_test

import (
	"testing"

	"github.com/aceworks/ace/internal/livetest"
)

// TestLive runs the tests every live adapter passes (livetest) against each pinned gemini.
func TestLive(t *testing.T) { livetest.Run(t, livetest.Gemini) }
