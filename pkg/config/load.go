package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is a problem with the configuration, located when possible.
type Error struct {
	File string
	Line int
	Col  int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Col > 0 {
				fmt.Fprintf(&b, ":%d", e.Col)
			}
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrInvalid is wrapped by every configuration error, so callers can tell them from I/O trouble.
var ErrInvalid = errors.New("invalid configuration")

func (e *Error) Unwrap() error { return ErrInvalid }

// Load reads the configuration: defaults, then the first file found (explicit path, $ACE_CONFIG,
// $XDG_CONFIG_HOME/ace/ace.toml, ~/.config/ace/ace.toml, ./ace.toml), then environment overrides
// (AGENT_WORKSPACE_ROOT, ACE_STORE_URL). No file at
// all is fine; an explicit path that does not exist is not. It returns the path used ("" for none).
func Load(explicit string, getenv func(string) string) (*Config, string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	path, err := discover(explicit, getenv)
	if err != nil {
		return nil, "", err
	}
	cfg := Default()
	var data []byte
	if path != "" {
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, path, fmt.Errorf("read config: %w", err)
		}
		if cfg, err = Parse(path, data); err != nil {
			return nil, path, err
		}
	}
	var fromEnv []string // keys the environment set: their errors are not the file's lines
	if root := getenv("AGENT_WORKSPACE_ROOT"); root != "" {
		cfg.Workspace.Root = root
		fromEnv = append(fromEnv, "workspace.root")
	}
	if u := getenv("ACE_STORE_URL"); u != "" {
		cfg.Store.URL = u
		fromEnv = append(fromEnv, "store.url")
	}
	cfg.Workspace.Root = expandHome(cfg.Workspace.Root, getenv)
	cfg.Tracker.Path = expandHome(cfg.Tracker.Path, getenv)
	cfg.Secrets.File = expandHome(cfg.Secrets.File, getenv)
	cfg.expandSandboxHomes(getenv)
	for i, d := range cfg.Eval.Releases {
		cfg.Eval.Releases[i] = expandHome(d, getenv)
	}
	if err := cfg.Validate(); err != nil {
		return nil, path, withFile(err, path, data, fromEnv)
	}
	return cfg, path, nil
}

func discover(explicit string, getenv func(string) string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("config file %s: %w", explicit, err)
		}
		return explicit, nil
	}
	if p := getenv("ACE_CONFIG"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("config file %s (from ACE_CONFIG): %w", p, err)
		}
		return p, nil
	}
	var candidates []string
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		candidates = append(candidates, filepath.Join(x, "ace", "ace.toml"))
	}
	if h := getenv("HOME"); h != "" {
		candidates = append(candidates, filepath.Join(h, ".config", "ace", "ace.toml"))
	}
	candidates = append(candidates, "ace.toml")
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", nil
}

func expandHome(p string, getenv func(string) string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Parse decodes a configuration file over the defaults. name is used in error messages.
func Parse(name string, data []byte) (*Config, error) {
	cfg := Default()
	// An agent's or a repository's table key is reported through its fields.
	agentTable := func(k toml.Key) bool { return len(k) == 2 && (k[0] == "agents" || k[0] == "repos") }
	if err := decode(name, data, cfg, agentTable); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decode is the one TOML decoding of ace: v is filled from data; syntax and type errors carry the file, line
// and column, and every key that v does not have is an error with its line (skip exempts keys reported
// otherwise).
func decode(name string, data []byte, v any, skip func(toml.Key) bool) error {
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e := &Error{File: name, Line: pe.Position.Line, Col: pe.Position.Col, Msg: pe.Message}
			if pe.LastKey != "" && !strings.Contains(pe.Message, "expected") {
				e.Key = pe.LastKey
			}
			return e
		}
		return &Error{File: name, Msg: err.Error()}
	}
	var errs []error
	for _, k := range md.Undecoded() {
		if skip != nil && skip(k) {
			continue
		}
		errs = append(errs, &Error{File: name, Line: lineOf(data, k), Key: k.String(), Msg: "unknown key"})
	}
	return errors.Join(errs...)
}

// lineOf finds the line of a key in the file: toml's metadata knows the positions of keys but does not export them.
func lineOf(data []byte, k toml.Key) int {
	exact, loose := findKey(data, k)
	if exact > 0 {
		return exact
	}
	return loose
}

// keyLine is the line of a dotted key as a validation error names it ("agent.fallback[1]": the line of fallback
// under [agent]), 0 unless the key is written in its own table: a key the file does not set has a default, and
// a line elsewhere would point at the wrong value.
func keyLine(data []byte, key string) int {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if j := strings.IndexByte(p, '['); j > 0 {
			p = p[:j]
		}
		parts[i] = strings.Trim(p, `"`) // repos."acme/events": the table's name without its quotes
	}
	exact, _ := findKey(data, parts)
	return exact
}

// findKey returns the line of k in its own table (exact) and, failing that, the first line that may set it in
// another way (loose: a dotted key, an inline table).
func findKey(data []byte, k toml.Key) (exact, loose int) {
	lines := strings.Split(string(data), "\n")
	section := strings.Join(k[:len(k)-1], ".")
	last := k[len(k)-1]
	keyRe := regexp.MustCompile(`^\s*("?)` + regexp.QuoteMeta(last) + `("?)\s*=`)
	current := ""
	fallback := 0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			current = strings.Trim(strings.TrimSpace(strings.SplitN(t, "#", 2)[0]), "[] ")
			current = strings.ReplaceAll(current, `"`, "") // [repos."acme/events"] is the key repos.acme/events
			if current == strings.Join(k, ".") {
				return i + 1, 0
			}
			continue
		}
		if keyRe.MatchString(l) {
			if current == section {
				return i + 1, 0
			}
			if fallback == 0 {
				fallback = i + 1
			}
		}
		// Dotted keys and inline tables: "markers = { ready = … }" or "markers.ready = …".
		if fallback == 0 && strings.Contains(l, last) && strings.Contains(l, "=") && strings.HasPrefix(section, current) {
			fallback = i + 1
		}
	}
	return 0, fallback
}

// withFile puts the file, and the line of the key where data has it, on the errors of Validate; keys set by the
// environment (fromEnv) get no line.
func withFile(err error, file string, data []byte, fromEnv []string) error {
	if file == "" {
		return err
	}
	var out []error
	for _, e := range unjoin(err) {
		var ce *Error
		if errors.As(e, &ce) && ce.File == "" {
			ce.File = file
			if ce.Line == 0 && ce.Key != "" && !slices.Contains(fromEnv, ce.Key) {
				ce.Line = keyLine(data, ce.Key)
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
