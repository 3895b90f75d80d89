package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
)

// Bundle is a compiled-in group of tools. bundles/all lists the bundles the
// binary carries, in order; the host provisions each selected one.
type Bundle interface {
	// Info describes the bundle. It is static and side-effect free: the host
	// calls it before any configuration is read.
	Info() Info
	// Provision builds the bundle's tools. env carries the bundle's logger,
	// its own config section and the host's services (the capture engine).
	Provision(ctx context.Context, env Env) ([]Tool, error)
}

// Info is a bundle's static description.
type Info struct {
	// ID names the bundle in --mcp-tools and [mcp] tools; ^[a-z][a-z0-9_]*$.
	ID string
	// Summary is one line saying what the bundle is for.
	Summary string
	// ByteBudget is the recorded ceiling of the bundle's compact tools/list
	// bytes; the registry refuses a bundle past it.
	ByteBudget Budget
}

// Budget is a ceiling on the compact JSON bytes of a bundle's tools/list
// entries, summed over its tools, as sent on the wire.
type Budget struct {
	// Default is the ceiling without output schemas (the default).
	Default int
	// WithOutputSchemas is the ceiling with --mcp-output-schemas.
	WithOutputSchemas int
}

// PromptBundle is implemented by a bundle that also offers prompts. A prompt
// whose tools are not all loaded under the current selection is hidden.
type PromptBundle interface {
	Prompts() []Prompt
}

// Prompt is an argument-less workflow prompt.
type Prompt struct {
	// Name is the prompt name, e.g. "triage-outage".
	Name string
	// Description says when to use it.
	Description string
	// Tools the prompt's steps call; the prompt is listed only when every
	// one of them is loaded.
	Tools []string
	// Text is the prompt's message to the model.
	Text string
}

// Limits are the server-wide ceilings a tool applies to its answer.
type Limits struct {
	// MaxRows is the ceiling of every limit (--mcp-max-rows, default 1000).
	MaxRows int
	// MaxBodyBytes caps bodies and snippets (--mcp-max-body-bytes, 4096).
	MaxBodyBytes int
	// MaxResponseBytes caps one answer (--mcp-max-response-bytes, 1048576).
	MaxResponseBytes int
	// MaxWaitSeconds caps waits and sweeps (--mcp-max-wait-seconds, 60).
	MaxWaitSeconds int
	// MaxFindings is save_findings' budget (--mcp-max-findings, 1000):
	// past it the tool refuses, never discards.
	MaxFindings int
	// Sweep bounds the background file sweeps of find_in_captures (the
	// --mcp-sweep-* flags; mcp-surface §5).
	Sweep SweepLimits
}

// SweepLimits bound find_in_captures' background sweeps (the design notes'
// "Sweep job bounds" and "Sweep ceilings").
type SweepLimits struct {
	// MaxFiles is the ceiling of a call's max_files and its default
	// (--mcp-sweep-max-files, 20; at most MaxSweepMaxFiles).
	MaxFiles int
	// DeadlineMS is the ceiling of a call's deadline_ms and its default
	// (--mcp-sweep-deadline-ms, 30000; at most MaxSweepDeadlineMS).
	DeadlineMS int
	// MaxRunning caps the sweeps running at once; one more is refused,
	// not queued (--mcp-sweep-max-running, 4; at most MaxSweepMaxRunning).
	MaxRunning int
	// MaxHeldResults caps the finished results held until collected
	// (--mcp-sweep-max-held-results, 16; at most MaxSweepMaxHeldResults).
	MaxHeldResults int
	// RetentionSecs is how long a finished result waits to be collected
	// (--mcp-sweep-result-retention-secs, 600; at most
	// MaxSweepResultRetentionSecs).
	RetentionSecs int
}

// Sweep defaults and maxima (mcp-surface §5; the design notes' "Sweep job
// bounds"): a running sweep is a goroutine with its own scratch stores, so
// the running maximum is sixteen times the default; four held results per
// running sweep at that maximum; a result waits at most as long as the
// longest sweep may run (12 h); max_files is a u32.
const (
	DefaultSweepMaxFiles        = 20
	DefaultSweepDeadlineMS      = 30000
	DefaultSweepMaxRunning      = 4
	DefaultSweepMaxHeldResults  = 16
	DefaultSweepRetentionSecs   = 600
	MaxSweepMaxFiles            = 4294967295
	MaxSweepDeadlineMS          = 43200000
	MaxSweepMaxRunning          = 64
	MaxSweepMaxHeldResults      = 256
	MaxSweepResultRetentionSecs = 43200
)

// DefaultSweepLimits returns the documented sweep defaults.
func DefaultSweepLimits() SweepLimits {
	return SweepLimits{MaxFiles: DefaultSweepMaxFiles, DeadlineMS: DefaultSweepDeadlineMS, MaxRunning: DefaultSweepMaxRunning,
		MaxHeldResults: DefaultSweepMaxHeldResults, RetentionSecs: DefaultSweepRetentionSecs}
}

// withDefaults fills the zero (or negative) fields with the defaults.
func (s SweepLimits) withDefaults() SweepLimits {
	d := DefaultSweepLimits()
	if s.MaxFiles <= 0 {
		s.MaxFiles = d.MaxFiles
	}
	if s.DeadlineMS <= 0 {
		s.DeadlineMS = d.DeadlineMS
	}
	if s.MaxRunning <= 0 {
		s.MaxRunning = d.MaxRunning
	}
	if s.MaxHeldResults <= 0 {
		s.MaxHeldResults = d.MaxHeldResults
	}
	if s.RetentionSecs <= 0 {
		s.RetentionSecs = d.RetentionSecs
	}
	return s
}

// Default limits (mcp-surface §2.1).
const (
	DefaultLimit            = 50
	DefaultMaxRows          = 1000
	DefaultMaxBodyBytes     = 4096
	DefaultMaxResponseBytes = 1048576
	DefaultMaxWaitSeconds   = 60
	DefaultMaxFindings      = 1000
)

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{MaxRows: DefaultMaxRows, MaxBodyBytes: DefaultMaxBodyBytes,
		MaxResponseBytes: DefaultMaxResponseBytes, MaxWaitSeconds: DefaultMaxWaitSeconds, MaxFindings: DefaultMaxFindings,
		Sweep: DefaultSweepLimits()}
}

// Env is what a bundle receives at Provision. Build one with [NewEnv] (the
// host does; bundle tests do too).
type Env struct {
	logger   *slog.Logger
	decode   func(v any) error
	services map[reflect.Type]any
	limits   Limits
	opts     map[string]bool
	res      *resources
	root     FileRoot
}

// EnvOptions builds an Env.
type EnvOptions struct {
	// Logger is the bundle's named logger; nil discards.
	Logger *slog.Logger
	// Decode decodes the bundle's own config section into a struct pointer,
	// refusing unknown keys; nil means the section is empty.
	Decode func(v any) error
	// Services are the typed values bundles reach with [Service], e.g. the
	// capture engine's handle. Each is keyed by its dynamic Go type.
	Services []any
	// Limits are the server-wide ceilings; zero fields take the defaults.
	Limits Limits
	// Options are the host's boolean opt-in flags (mcp-allow-<verb>) by
	// name, for tools that refuse when theirs is off. A flag exists only
	// with the tool it enables.
	Options map[string]bool
	// FileRoot is the file sandbox (--mcp-file-root); the zero value
	// disables file arguments.
	FileRoot FileRoot
}

// NewEnv builds an Env.
func NewEnv(o EnvOptions) Env {
	e := Env{logger: o.Logger, decode: o.Decode, services: map[reflect.Type]any{}, limits: o.Limits, opts: o.Options, res: &resources{}, root: o.FileRoot}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	for _, s := range o.Services {
		if s != nil {
			e.services[reflect.TypeOf(s)] = s
		}
	}
	d := DefaultLimits()
	if e.limits.MaxRows <= 0 {
		e.limits.MaxRows = d.MaxRows
	}
	if e.limits.MaxBodyBytes <= 0 {
		e.limits.MaxBodyBytes = d.MaxBodyBytes
	}
	if e.limits.MaxResponseBytes <= 0 {
		e.limits.MaxResponseBytes = d.MaxResponseBytes
	}
	if e.limits.MaxWaitSeconds <= 0 {
		e.limits.MaxWaitSeconds = d.MaxWaitSeconds
	}
	if e.limits.MaxFindings <= 0 {
		e.limits.MaxFindings = d.MaxFindings
	}
	e.limits.Sweep = e.limits.Sweep.withDefaults()
	return e
}

// Logger returns the bundle's named logger (stderr through the host's logger).
func (e Env) Logger() *slog.Logger {
	if e.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.logger
}

// Decode fills cfg (a pointer to the bundle's config struct, pre-set with its
// defaults) from the bundle's own config section [bundles.<id>]. Unknown keys
// are an error. Bundles never see the config library.
func (e Env) Decode(cfg any) error {
	if e.decode == nil {
		return nil
	}
	return e.decode(cfg)
}

// Limits returns the server-wide ceilings.
func (e Env) Limits() Limits { return e.limits }

// Option reports a host opt-in flag (mcp-allow-<verb>) by name; false for a
// flag the host does not define.
func (e Env) Option(name string) bool { return e.opts[name] }

// FileRoot returns the server's file sandbox (--mcp-file-root), shared by
// every tool and the file resources. A tool argument naming a file goes
// through it: Open or ReadFile to read, WriteNew to create, WriteNewDir to
// create a folder of new files (each opens
// beneath the root, race-free, and reads regular files only). Without a root every call refuses with -32602 "file tools are
// disabled…"; the tool stays listed (mcp-surface §1.3).
func (e Env) FileRoot() FileRoot { return e.root }

// Service returns the host-provided service of type T, e.g.
//
//	capture, err := sdk.Service[*engine.Capture](env)
//
// The lookup is by exact Go type (or, for an interface T, the first provided
// value implementing it, by type name), so it is type-safe without sdk
// knowing the engine. It fails when the host provides no value of that type.
func Service[T any](e Env) (T, error) {
	var zero T
	t := reflect.TypeFor[T]()
	v, ok := e.services[t]
	if !ok && t.Kind() == reflect.Interface {
		var names []string
		for st := range e.services {
			if st.Implements(t) {
				names = append(names, st.String())
			}
		}
		sortStrings(names)
		for st, sv := range e.services {
			if len(names) > 0 && st.String() == names[0] {
				v, ok = sv, true
			}
		}
	}
	if !ok {
		return zero, fmt.Errorf("no service of type %s (the host provides: %s)", reflect.TypeFor[T](), e.serviceNames())
	}
	return v.(T), nil
}

func (e Env) serviceNames() string {
	if len(e.services) == 0 {
		return "none"
	}
	var names []string
	for t := range e.services {
		names = append(names, t.String())
	}
	sortStrings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
