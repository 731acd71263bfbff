// Package secrets resolves named secrets — from the environment, a 0600 TOML file, or a command run without a
// shell — and redacts every resolved value from logs.
package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// ErrNotFound is returned when no source has the secret.
var ErrNotFound = errors.New("secret not found")

// Options configure a Resolver.
type Options struct {
	// File is a TOML file of NAME = "value" lines; it must not be readable by group or others.
	File string
	// Commands maps a name to a command line (split on spaces and quotes, run without a shell) whose stdout is
	// the value.
	Commands       map[string]string
	CommandTimeout time.Duration
	// LookupEnv reads the environment; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Redactor, when set, learns every value resolved.
	Redactor *Redactor
}

// Resolver resolves secrets by name. Values are cached for the life of the process.
type Resolver struct {
	o     Options
	mu    sync.Mutex
	cache map[string]string
	file  map[string]string
}

// NewResolver returns a resolver over o.
func NewResolver(o Options) *Resolver {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 10 * time.Second
	}
	return &Resolver{o: o, cache: map[string]string{}}
}

// Resolve returns the secret name from the environment, else the secrets file, else its command.
func (r *Resolver) Resolve(ctx context.Context, name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.cache[name]; ok {
		return v, nil
	}
	v, err := r.resolve(ctx, name)
	if err != nil {
		return "", err
	}
	r.cache[name] = v
	if r.o.Redactor != nil {
		r.o.Redactor.Add(v)
	}
	return v, nil
}

func (r *Resolver) resolve(ctx context.Context, name string) (string, error) {
	if v, ok := r.o.LookupEnv(name); ok && v != "" {
		return v, nil
	}
	if r.o.File != "" {
		if r.file == nil {
			f, err := readFile(r.o.File)
			if err != nil {
				return "", err
			}
			r.file = f
		}
		if v, ok := r.file[name]; ok && v != "" {
			return v, nil
		}
	}
	if line, ok := r.o.Commands[name]; ok {
		return r.run(ctx, name, line)
	}
	return "", fmt.Errorf("%s: not in the environment, the secrets file or [secrets.commands]: %w", name, ErrNotFound)
}

// ResolveAll resolves every name; the first failure is returned.
func (r *Resolver) ResolveAll(ctx context.Context, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, err := r.Resolve(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

// readFile loads the secrets file, refusing one that others can read.
func readFile(path string) (map[string]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets file %s has mode %04o: it must not be readable by group or others "+
			"(fix: chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	m := map[string]string{}
	if _, err := toml.DecodeFile(path, &m); err != nil {
		return nil, fmt.Errorf("secrets file %s: %w", path, err)
	}
	return m, nil
}

func (r *Resolver) run(ctx context.Context, name, line string) (string, error) {
	argv, err := SplitCommand(line)
	if err != nil || len(argv) == 0 {
		return "", fmt.Errorf("secrets.commands.%s: %q: %v", name, line, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("secrets.commands.%s (%s): %w: %s", name, argv[0], err, strings.TrimSpace(stderr.String()))
	}
	v := strings.TrimRight(string(out), "\r\n")
	if v == "" {
		return "", fmt.Errorf("secrets.commands.%s printed nothing: %w", name, ErrNotFound)
	}
	return v, nil
}

// SplitCommand splits a command line into words the way a shell would for plain words, single and double
// quotes and backslash escapes — and nothing else: no variables, globs or substitutions.
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
