package agent

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"2.1.197", "2.1.331", -1}, {"2.1.331", "2.1.331", 0}, {"2.10.0", "2.9.9", 1}, {"0.169.0", "0.61.0", 1},
		{"1.0.0-beta", "1.0.0", -1}, {"1.0", "1.0.0", 0}, {"1.0.0-beta.2", "1.0.0-beta.10", -1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	r := VersionRange{Oldest: "2.1.197", Newest: "2.1.331"}
	if r.Place("2.1.100") != -1 || r.Place("2.1.200") != 0 || r.Place("2.1.400") != 1 || r.String() != "2.1.197–2.1.331" {
		t.Errorf("range %v misplaces versions", r)
	}
}

func TestParseVersion(t *testing.T) {
	if ParseVersion("2.1.197 (Claude Code)\n") != "2.1.197" || ParseVersion("codex-cli 0.169.0") != "0.169.0" || ParseVersion("nope") != "" {
		t.Error("ParseVersion")
	}
}
