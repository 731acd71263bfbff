package egress

import "testing"

func TestAllow(t *testing.T) {
	a, err := ParseAllow([]string{"api.example.com", "*.githubusercontent.com", "registry.test:443", "127.0.0.1:8080", "[::1]:9000", "*.pkg.test:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.Example.com.", 80, true},
		{"example.com", 443, false},
		{"evil-api.example.com", 443, false},
		{"api.example.com.evil.test", 443, false},
		{"raw.githubusercontent.com", 443, true},
		{"a.b.githubusercontent.com", 443, true},
		{"githubusercontent.com", 443, false},
		{"registry.test", 443, true},
		{"registry.test", 80, false},
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"localhost", 8080, false},
		{"::1", 9000, true},
		{"x.pkg.test", 443, true},
		{"x.pkg.test", 80, false},
	} {
		if got := a.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

func TestParseAllowRejects(t *testing.T) {
	for _, p := range []string{"", "exa mple.com", "host:0", "host:x", "*.127.0.0.1", "a..b", "ex#ample.com", "*."} {
		if _, err := ParseAllow([]string{p}); err == nil {
			t.Errorf("ParseAllow(%q) accepted", p)
		}
	}
}
