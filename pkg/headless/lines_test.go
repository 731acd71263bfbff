package headless

import (
	"strings"
	"testing"
)

func TestReadLinesSurvivesOverlongLines(t *testing.T) {
	t.Parallel()
	in := "short\n" + strings.Repeat("x", 100) + "\n\nlast without newline"
	var got []string
	if err := readLines(strings.NewReader(in), 10, func(b []byte) { got = append(got, string(b)) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"short", strings.Repeat("x", 10), "", "last witho"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	// Lines longer than the reader's buffer are joined from fragments.
	big := strings.Repeat("y", 200<<10)
	got = nil
	_ = readLines(strings.NewReader(big+"\nz\n"), 1<<20, func(b []byte) { got = append(got, string(b)) })
	if len(got) != 2 || got[0] != big || got[1] != "z" {
		t.Errorf("%d lines, first %d bytes", len(got), len(got[0]))
	}
}

func TestParseAllKeepsGoingAfterGiantLine(t *testing.T) {
	t.Parallel()
	p := typeParser()
	var evs []Event
	in := "{\"type\":\"init\",\"session_id\":\"s\"}\n" + strings.Repeat("{", 50) + "\n{\"type\":\"result\",\"status\":\"success\"}\n"
	_ = readLines(strings.NewReader(in), 40, func(b []byte) { evs = append(evs, p.Parse(b)...) })
	if len(evs) != 3 || evs[1].Kind != KindRaw || evs[2].Kind != KindResult {
		t.Errorf("events %+v", evs)
	}
}
