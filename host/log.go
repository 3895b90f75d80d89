package host

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newRootLogger returns the root logger "sipnab", always writing to w
// (stderr in production: in stdio mode stdout is the JSON-RPC wire).
// SIPNAB_LOG takes a level ("debug") or "mcp_audit=info" style entries;
// quiet raises the level to warn but keeps mcp_audit lines when
// SIPNAB_LOG names mcp_audit.
func newRootLogger(w io.Writer, spec string, quiet bool) (root hclog.Logger, audit hclog.Logger) {
	level := hclog.Info
	auditLevel := hclog.Info
	if quiet {
		level, auditLevel = hclog.Warn, hclog.Warn
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if target, lv, ok := strings.Cut(part, "="); ok {
			if target == "mcp_audit" {
				auditLevel = hclog.LevelFromString(lv)
			}
			continue
		}
		if l := hclog.LevelFromString(part); l != hclog.NoLevel {
			level = l
			if !quiet {
				auditLevel = l
			}
		}
	}
	root = hclog.New(&hclog.LoggerOptions{Name: "sipnab", Output: w, Level: level, DisableTime: false})
	// The audit line is JSON so its args value is encoded exactly as in the
	// audit file: the two can never disagree.
	audit = hclog.New(&hclog.LoggerOptions{Name: "sipnab.mcp_audit", Output: w, Level: auditLevel, JSONFormat: true})
	return root, audit
}

// slogAdapter is a slog.Handler writing through an hclog.Logger, for mcp-go
// and the engine, which take *slog.Logger.
type slogAdapter struct {
	l     hclog.Logger
	attrs []any
	group string
}

// toSlog wraps an hclog logger as a *slog.Logger.
func toSlog(l hclog.Logger) *slog.Logger { return slog.New(&slogAdapter{l: l}) }

func (a *slogAdapter) Enabled(_ context.Context, lv slog.Level) bool {
	return a.l.GetLevel() <= hclogLevel(lv)
}

func hclogLevel(lv slog.Level) hclog.Level {
	switch {
	case lv < slog.LevelInfo:
		return hclog.Debug
	case lv < slog.LevelWarn:
		return hclog.Info
	case lv < slog.LevelError:
		return hclog.Warn
	}
	return hclog.Error
}

func (a *slogAdapter) Handle(_ context.Context, r slog.Record) error {
	args := append([]any{}, a.attrs...)
	r.Attrs(func(at slog.Attr) bool {
		args = append(args, a.key(at.Key), at.Value.Resolve().Any())
		return true
	})
	a.l.Log(hclogLevel(r.Level), r.Message, args...)
	return nil
}

func (a *slogAdapter) key(k string) string {
	if a.group == "" {
		return k
	}
	return a.group + "." + k
}

func (a *slogAdapter) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &slogAdapter{l: a.l, attrs: append([]any{}, a.attrs...), group: a.group}
	for _, at := range attrs {
		n.attrs = append(n.attrs, a.key(at.Key), at.Value.Resolve().Any())
	}
	return n
}

func (a *slogAdapter) WithGroup(name string) slog.Handler {
	if name == "" {
		return a
	}
	return &slogAdapter{l: a.l, attrs: a.attrs, group: a.key(name)}
}
