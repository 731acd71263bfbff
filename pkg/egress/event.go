package egress

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// Event is one connection through the proxy, reported once it has ended (a refused one at once).
type Event struct {
	Start time.Time
	// Method is CONNECT for a tunnel (HTTPS), or the method of a plain-HTTP request.
	Method string
	Host   string
	Port   int
	// Allowed says whether the allow list let the connection out; Status is what the proxy answered the client
	// (200 for an open tunnel, 403 refused, 400 malformed, 502 when the destination could not be reached).
	Allowed bool
	Status  int
	// Up and Down count the bytes relayed to and from the destination, HTTP request and response included.
	Up, Down int64
	Duration time.Duration
	// Err says why a connection failed (refused, unreachable, malformed); nil for one that worked.
	Err error
}

// Addr is host:port.
func (e Event) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// LogValue lets slog print an Event as a group of its fields.
func (e Event) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("method", e.Method), slog.String("host", e.Host), slog.Int("port", e.Port),
		slog.Bool("allowed", e.Allowed), slog.Int("status", e.Status),
		slog.Int64("up", e.Up), slog.Int64("down", e.Down), slog.Duration("duration", e.Duration),
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	return slog.GroupValue(attrs...)
}

// LogTo returns a Report function that logs each connection to l: refused ones as warnings.
func LogTo(l *slog.Logger) func(Event) {
	return func(e Event) {
		level := slog.LevelInfo
		if !e.Allowed {
			level = slog.LevelWarn
		}
		l.Log(context.Background(), level, "egress", "conn", e)
	}
}
