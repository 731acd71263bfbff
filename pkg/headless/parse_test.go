package headless

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// typeParser is a parser for the tests of what every parser relies on: a JSON line with a "type" becomes an
// event of that kind, anything else a raw one.
func typeParser() Parser { return typeParse{} }

type typeParse struct{}

func (typeParse) Parse(line []byte) []Event {
	var m struct {
		Type string `json:"type"`
	}
	if evs, ok := Decode(line, &m, &m.Type); !ok {
		return evs
	}
	return []Event{{Kind: Kind(m.Type)}}
}

func (typeParse) Flush() []Event { return nil }

func TestUnknownFormat(t *testing.T) {
	t.Parallel()
	ps := Parsers{"json": typeParser}
	if _, err := ps.New("aider"); err == nil || !strings.Contains(err.Error(), "want one of json") {
		t.Errorf("New(aider): %v", err)
	}
	if _, err := ps.ParseAll("aider", strings.NewReader("")); err == nil {
		t.Error("ParseAll(aider) succeeded")
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", maxOutput) // 2 bytes a rune, so the cut lands mid-rune
	s = "a" + s
	got := Truncate(s)
	if len(got) > maxOutput || !strings.HasPrefix(s, got) || !utf8.ValidString(got) {
		t.Errorf("truncate: len %d", len(got))
	}
}
