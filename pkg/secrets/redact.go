package secrets

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
)

// minSecretLen: shorter values are not redacted — replacing every "ab" in every log line would destroy logs
// and hide nothing worth hiding.
const minSecretLen = 4

// Redactor replaces known secret values with "***". It is safe for concurrent use.
type Redactor struct {
	mu       sync.RWMutex
	mask     string
	values   []string
	replacer *strings.Replacer
}

// NewRedactor returns an empty redactor that writes "***" for a secret.
func NewRedactor() *Redactor { return &Redactor{mask: "***"} }

// NewMaskingRedactor returns an empty redactor that writes mask for a secret (transcripts say "[redacted]").
func NewMaskingRedactor(mask string) *Redactor { return &Redactor{mask: mask} }

// Add teaches the redactor more values.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) >= minSecretLen && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	pairs := make([]string, 0, 2*len(r.values))
	for _, v := range r.values {
		pairs = append(pairs, v, r.mask)
	}
	r.replacer = strings.NewReplacer(pairs...)
}

// Redact returns s with every known secret replaced.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// NewRedactingHandler wraps h so that no record it handles carries a known secret: the message and every
// attribute (in groups, errors, Stringers and LogValuers too) are redacted.
func NewRedactingHandler(h slog.Handler, r *Redactor) slog.Handler {
	return &redactingHandler{h: h, r: r}
}

type redactingHandler struct {
	h slog.Handler
	r *Redactor
}

func (rh *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return rh.h.Enabled(ctx, l)
}

func (rh *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, rh.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rh.attr(a))
		return true
	})
	return rh.h.Handle(ctx, out)
}

func (rh *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = rh.attr(a)
	}
	return &redactingHandler{h: rh.h.WithAttrs(red), r: rh.r}
}

func (rh *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: rh.h.WithGroup(name), r: rh.r}
}

func (rh *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, rh.r.Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = rh.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, rh.r.Redact(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, rh.r.Redact(x.String()))
		case []byte:
			return slog.String(a.Key, rh.r.Redact(string(x)))
		default:
			return slog.Any(a.Key, rh.r.Redact(slog.AnyValue(x).String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
