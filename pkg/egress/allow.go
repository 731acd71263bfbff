package egress

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Allow is a parsed allow list: a connection goes out only when one of its patterns matches its host and port.
type Allow struct {
	patterns []pattern
}

type pattern struct {
	host     string // lower case, no trailing dot; for a wildcard, the suffix including its leading dot
	wildcard bool
	port     int // 0: any port
}

// ParseAllow parses host patterns: "api.example.com" (that host, any port), "*.example.com" (any subdomain,
// not example.com itself), "host:443" or "[::1]:8080" (that port only), "*.example.com:443". Names are matched
// case-insensitively; an IP address matches only itself, never a name that resolves to it.
func ParseAllow(patterns []string) (Allow, error) {
	var a Allow
	for _, s := range patterns {
		p, err := parsePattern(s)
		if err != nil {
			return Allow{}, fmt.Errorf("allow %q: %w", s, err)
		}
		a.patterns = append(a.patterns, p)
	}
	return a, nil
}

func parsePattern(s string) (pattern, error) {
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return pattern{}, fmt.Errorf("bad port %q", p)
		}
		host, port = h, n
	} else if strings.Count(s, ":") == 1 {
		return pattern{}, fmt.Errorf("bad host:port: %w", err)
	}
	var p pattern
	p.port = port
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wildcard = true
		host = rest
	}
	host = canonical(host)
	if !validHost(host) {
		return pattern{}, fmt.Errorf("bad host %q", host)
	}
	if p.wildcard {
		if net.ParseIP(host) != nil {
			return pattern{}, fmt.Errorf("a wildcard needs a domain, not an address")
		}
		host = "." + host
	}
	p.host = host
	return p, nil
}

// Allows reports whether host:port may be reached.
func (a Allow) Allows(host string, port int) bool {
	host = canonical(host)
	for _, p := range a.patterns {
		if p.port != 0 && p.port != port {
			continue
		}
		if p.wildcard && strings.HasSuffix(host, p.host) && len(host) > len(p.host) {
			return true
		}
		if !p.wildcard && host == p.host {
			return true
		}
	}
	return false
}

// canonical lower-cases a name and drops its trailing dot, so that "API.Example.com." is "api.example.com".
func canonical(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// validHost accepts an IP address or a DNS name of letters, digits, '-', '_' and '.': anything else in a
// request's host (a '#', a '/', a space) is a trick, not a destination.
func validHost(host string) bool {
	if net.ParseIP(host) != nil {
		return true
	}
	if host == "" || len(host) > 253 || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return false
	}
	for _, r := range host {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}
