package codex_test

import (
	"testing"

	"github.com/aceworks/ace/pkg/live/livetest"
)

func TestStartWithoutTheProtocol(t *testing.T) { livetest.WithoutTheProtocol(t, livetest.Codex) }
