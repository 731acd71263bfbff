// Package logging builds ace's slog loggers: tint for people (colour only on a terminal without NO_COLOR), JSON
// for machines, both behind the secrets redactor.
package logging

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"

	"github.com/aceworks/ace/pkg/secrets"
)

// New returns a logger writing to w in format "text" or "json" at level, redacting r's secrets (r may be nil).
func New(w io.Writer, format string, level slog.Level, r *secrets.Redactor) *slog.Logger {
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	} else {
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !colour(w)})
	}
	if r == nil {
		r = secrets.NewRedactor()
	}
	return slog.New(secrets.NewRedactingHandler(h, r))
}

func colour(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
