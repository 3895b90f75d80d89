// Package host is sipnab's startup: configuration, logging, the MCP server
// with its stdio and streamable HTTP transports, auth, guards, the audit
// record and the batch CLI. It receives the compiled-in bundles from
// cmd/sipnab and never names one.
package host

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure or partial input
	exitUsage   = 2
)

// IO is the process's standard streams and environment.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Env    []string
}

// Main runs sipnab with the given arguments (without the program name) and
// the compiled-in bundles, and returns the exit code.
func Main(args []string, bundles []sdk.Bundle) int {
	return Run(context.Background(), args, bundles, IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Env: os.Environ()})
}

// Run is Main with explicit streams (tests use it).
func Run(ctx context.Context, args []string, bundles []sdk.Bundle, sio IO) int {
	cfg, err := loadConfig(args, sio.Env, sio.Stderr)
	if err != nil {
		if errors.Is(err, errHelp) {
			writeHelp(sio.Stdout)
			return exitOK
		}
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitUsage
	}
	cfg.stdin = sio.Stdin // -I - (host/capture.go)
	if cfg.Version {
		fmt.Fprintln(sio.Stdout, versionLine())
		return exitOK
	}
	logSpec := ""
	for _, kv := range sio.Env {
		if v, ok := strings.CutPrefix(kv, "SIPNAB_LOG="); ok {
			logSpec = v
		}
	}
	root, auditLog := newRootLogger(sio.Stderr, logSpec, cfg.Quiet)

	if cfg.MintToken {
		return mint(cfg, sio)
	}
	if err := checkStartup(cfg); err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitUsage
	}
	parent := ctx
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	runDone := make(chan struct{})
	defer close(runDone)
	go exitAfterSignal(parent, ctx, stop, runDone, sio.Stderr, stopGrace, os.Exit)
	if cfg.MCP.Enabled {
		code, err := runMCP(ctx, cfg, bundles, sio, root, auditLog)
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
				return exitUsage
			}
			fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
			return exitFailure
		}
		return code
	}
	return runBatch(ctx, cfg, sio, root)
}

// stopGrace is how long a run may take to stop after SIGINT or SIGTERM
// before the process exits anyway.
const stopGrace = 30 * time.Second

// exitAfterSignal makes SIGINT and SIGTERM always end a run.
// The first signal cancels the run's context (sig), which stops the
// sources and lets a batch run write its document; the signals then get
// their default action back (stop), so a second one kills the process at
// once; and if the run has not returned within grace, the process exits
// with exitFailure, saying so. A context ended by the caller (parent), not
// by a signal, does none of this.
func exitAfterSignal(parent, sig context.Context, stop func(), runDone <-chan struct{}, stderr io.Writer, grace time.Duration, exit func(int)) {
	select {
	case <-runDone:
		return
	case <-sig.Done():
	}
	if parent.Err() != nil {
		return
	}
	stop()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-runDone:
	case <-t.C:
		fmt.Fprintf(stderr, "sipnab: still stopping %v after SIGINT/SIGTERM; exiting now\n", grace)
		exit(exitFailure)
	}
}

// checkStartup applies the startup refusals of mcp-surface §1.4.
func checkStartup(cfg *Config) error {
	mcpOn := cfg.MCP.Enabled
	if !cfg.NoTUI {
		if mcpOn {
			return usagef("--mcp needs -N/--no-tui")
		}
		return usagef("the terminal UI is not built; run with -N (batch: -N -I FILE|-i IFACE|-L ADDR [--json|--json-dialogs|--json-run|--report|--analyze|--json-analyze]; MCP: -N --mcp)")
	}
	if err := checkAnalysis(cfg); err != nil {
		return err
	}
	if err := checkBatch(cfg); err != nil {
		return err
	}
	if err := checkEgress(cfg); err != nil {
		return err
	}
	if err := checkCapture(cfg); err != nil {
		return err
	}
	if n := cfg.Cores; n < 1 || n > 256 {
		return usagef("--cores %d: want 1 to 256", n)
	}
	if n := cfg.HEP.SilenceWarn; n < 1 {
		return usagef("--hep-silence-warn %d: want at least 1 second", n)
	}
	if n := cfg.Detect.FindingsHistory; n < 1 || n > 10000 {
		return usagef("--findings-history %d: want 1 to 10000", n)
	}
	if n := cfg.VCon.MaxInlineMedia; n < 0 {
		return usagef("--vcon-max-inline-media %d: want 0 (inline none) or more bytes", n)
	}
	if cfg.CallReport == "" {
		for f, on := range map[string]bool{"markdown": cfg.Markdown, "no-cli-print": cfg.NoCLIPrint} {
			if on {
				return usagef("--%s goes with --call-report <Call-ID>", f)
			}
		}
	} else if mcpOn {
		return usagef("--call-report is a batch output; it does not combine with --mcp (render_ladder answers the same document)")
	}
	if mcpOn && cfg.LintFailOn != "" {
		return usagef("--lint-fail-on gates a batch run; it does not combine with --mcp (lint_dialog answers per dialog)")
	}
	if mcpOn {
		transport := cfg.MCP.Transport
		switch transport {
		case "stdio":
			if on := chosenOutputs(cfg); len(on) > 0 {
				return usagef("%s writes to stdout, which carries JSON-RPC with stdio MCP; use --mcp-transport http or drop %s", on[0], on[0])
			}
		case "http":
			if on := chosenOutputs(cfg); len(on) > 0 {
				return usagef("%s is a batch output; it does not combine with --mcp", strings.Join(on, " and "))
			}
		default:
			return usagef("--mcp-transport %q: want stdio or http", transport)
		}
		for _, c := range []struct {
			key string
			v   int
		}{{"limits.mcp_max_rows", cfg.Limits.MCPMaxRows}, {"mcp.max_body_bytes", cfg.MCP.MaxBodyBytes},
			{"mcp.max_response_bytes", cfg.MCP.MaxResponseBytes}, {"mcp.max_wait_seconds", cfg.MCP.MaxWaitSeconds}, {"mcp.max_findings", cfg.MCP.MaxFindings}} {
			if c.v < 1 {
				return usagef("%s must be at least 1", c.key)
			}
		}
		for _, c := range []struct {
			key string
			v   int
		}{{"mcp.max_concurrent", cfg.MCP.MaxConcurrent}, {"mcp.rate_limit_per_peer", cfg.MCP.RateLimitPerPeer}} {
			if c.v < 0 {
				return usagef("%s must be 0 (unlimited) or more", c.key)
			}
		}
		// The sweep bounds, each between 1 and its maximum (mcp-surface §5).
		for _, c := range []struct {
			key    string
			v, max int
		}{{"mcp.sweep_max_files", cfg.MCP.SweepMaxFiles, sdk.MaxSweepMaxFiles}, {"mcp.sweep_deadline_ms", cfg.MCP.SweepDeadlineMS, sdk.MaxSweepDeadlineMS},
			{"mcp.sweep_max_running", cfg.MCP.SweepMaxRunning, sdk.MaxSweepMaxRunning}, {"mcp.sweep_max_held_results", cfg.MCP.SweepMaxHeldResults, sdk.MaxSweepMaxHeldResults},
			{"mcp.sweep_result_retention_secs", cfg.MCP.SweepResultRetentionSecs, sdk.MaxSweepResultRetentionSecs}} {
			if c.v < 1 || c.v > c.max {
				return usagef("%s must be between 1 and %d, got %d", c.key, c.max, c.v)
			}
		}
		if ct, mw := cfg.MCP.CallTimeout, cfg.MCP.MaxWaitSeconds; ct <= mw {
			return usagef("--mcp-call-timeout %d must exceed --mcp-max-wait-seconds %d: a tool that waits would time out first", ct, mw)
		}
	}
	return nil
}

func mint(cfg *Config, sio IO) int {
	keys, err := signingKeys(cfg)
	if err == nil && len(keys) == 0 {
		err = usagef("--mint-token needs a signing key (--mcp-signing-key, --mcp-signing-key-file or SIPNAB_MCP_SIGNING_KEY)")
	}
	var tok string
	if err == nil {
		ttl := time.Duration(cfg.MCP.TokenTTL) * time.Second
		tok, err = mintToken(keys[0], cfg.TokenID, cfg.TokenScope, tokenAudience, time.Now().Add(ttl))
	}
	if err != nil {
		fmt.Fprintf(sio.Stderr, "sipnab: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(sio.Stdout, tok)
	return exitOK
}

// Services are the typed values the host hands every bundle (see
// sdk.Service). A capture source registers here once the engine runs.
type serviceList []any

// buildRegistry provisions every compiled-in bundle.
func buildRegistry(ctx context.Context, cfg *Config, bundles []sdk.Bundle, root hclog.Logger, services serviceList, limits sdk.Limits, files sdk.FileRoot) (*sdk.Registry, error) {
	// The opt-in flags (mcp-allow-<verb>) handed to bundles. Each is added
	// with the tool it enables, never before: this build defines
	// mcp-allow-save-findings (save_findings) only
	// (TestNoOptInFlagForAToolNotBuilt).
	opts := map[string]bool{}
	for _, o := range options {
		if strings.HasPrefix(o.flag, "mcp-allow-") {
			opts[o.flag] = cfg.value(o.key).(bool)
		}
	}
	env := func(info sdk.Info) sdk.Env {
		return sdk.NewEnv(sdk.EnvOptions{
			Logger:   toSlog(root.Named("bundle." + info.ID)),
			Decode:   cfg.BundleDecoder(info.ID),
			Services: services,
			Limits:   limits,
			Options:  opts,
			FileRoot: files,
		})
	}
	// An unknown argument's refusal names the closest valid one, by the
	// filter language's "did you mean".
	return sdk.Register(ctx, bundles, env, sdk.RegistryOptions{Suggest: filter.Suggest})
}

func limitsFrom(cfg *Config) sdk.Limits {
	return sdk.Limits{
		MaxRows:          cfg.Limits.MCPMaxRows,
		MaxBodyBytes:     cfg.MCP.MaxBodyBytes,
		MaxResponseBytes: cfg.MCP.MaxResponseBytes,
		MaxWaitSeconds:   cfg.MCP.MaxWaitSeconds,
		MaxFindings:      cfg.MCP.MaxFindings,
		Sweep: sdk.SweepLimits{MaxFiles: cfg.MCP.SweepMaxFiles, DeadlineMS: cfg.MCP.SweepDeadlineMS, MaxRunning: cfg.MCP.SweepMaxRunning,
			MaxHeldResults: cfg.MCP.SweepMaxHeldResults, RetentionSecs: cfg.MCP.SweepResultRetentionSecs},
	}
}

func runMCP(ctx context.Context, cfg *Config, bundles []sdk.Bundle, sio IO, root, auditLog hclog.Logger) (int, error) {
	log := root.Named("mcp")
	transport := cfg.MCP.Transport

	// Everything that needs the starting user's rights happens before the
	// privilege drop: secrets, TLS keys, the audit file.
	var verify *verifier
	var tlsCfg *tls.Config
	var resURL *netURL
	if transport == "http" {
		var err error
		if verify, err = newVerifier(cfg); err != nil {
			return 0, err
		}
		if s := cfg.MCP.ResourceURL; s != "" {
			u, err := parseResourceURL(s)
			if err != nil {
				return 0, err
			}
			resURL = u
		}
		bind := cfg.MCP.Bind
		host, _, err := net.SplitHostPort(bind)
		if err != nil {
			return 0, usagef("--mcp-bind %q: %v", bind, err)
		}
		if !isLoopbackHost(host) && !verify.configured() {
			return 0, usagef("--mcp-bind %s is not a loopback address and no credential is configured (--mcp-token, --mcp-token-file, --mcp-signing-key); refusing to start", bind)
		}
		cert, key := cfg.MCP.TLSCert, cfg.MCP.TLSKey
		if (cert == "") != (key == "") {
			return 0, usagef("--mcp-tls-cert and --mcp-tls-key go together")
		}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return 0, usagef("loading TLS key pair: %v", err)
			}
			tlsCfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		}
	} else if cfg.MCP.ResourceURL != "" {
		if _, err := parseResourceURL(cfg.MCP.ResourceURL); err != nil {
			return 0, err
		}
	}
	audit, err := openAuditor(auditLog, cfg.MCP.AuditFile)
	if err != nil {
		return 0, err
	}
	defer audit.close()

	limits := limitsFrom(cfg)
	if audit.toFile() {
		// An answer whose audit record cannot be completed gains one
		// note (server.go, auditNote): tools fit below the cap less room
		// for it, so the note never carries an answer past the cap.
		limits.MaxResponseBytes -= auditNoteReserve
	}
	var drop func() error
	// ranAs is the user sipnab dropped root to; "" while it keeps the
	// starting user's rights.
	ranAs := ""
	if transport == "http" {
		// Root is dropped once secrets, keys, the audit file and live
		// sockets are open, before capture files are read and before the
		// listener binds.
		drop = func() error {
			wasRoot := os.Geteuid() == 0
			if err := dropPrivileges(cfg.User, log); err != nil {
				return err
			}
			if wasRoot {
				ranAs = cmp.Or(cfg.User, "nobody")
			}
			return nil
		}
	}
	// shutdown_server's clean stop (sdk.Shutdowner, host/control.go)
	// cancels this context once its answer is written.
	ctx, cancelServe := context.WithCancel(ctx)
	defer cancelServe()
	stop := &stopper{log: log, cancel: cancelServe}
	elicit := &elicitor{}
	eng, err := startEngine(ctx, cfg, root, drop)
	if err != nil {
		return 0, afterDrop(err, ranAs)
	}
	defer func() { _ = eng.stopEgress(sio.Stderr) }() // -O and -H end with the server
	if done := eng.capture.Done(); done != nil {
		go func() {
			// When a file load ends, the detectors judge the probes still
			// waiting for an answer at its end (and --fail2ban-log writes
			// what that finds) without waiting for a tool call.
			<-done
			eng.capture.Detector().Settle()
		}()
	}
	files, err := fileRootOf(cfg, eng)
	if err != nil {
		_ = eng.capture.Close()
		return 0, afterDrop(err, ranAs)
	}
	th := thresholdsOf(cfg)
	log.Debug("analysis thresholds", "thresholds", thresholdsLine(th))
	services := append(eng.services(), th, correlationOf(cfg), buildInfoOf(bundles), sdk.Shutdowner(stop), sdk.Elicitor(elicit),
		vcon.Options{MaxInlineMedia: int64(cfg.VCon.MaxInlineMedia)})
	reg, err := buildRegistry(ctx, cfg, bundles, root, services, limits, files)
	// A bundle over its byte budget costs agents context, not correctness:
	// the tests refuse it, startup only warns.
	budget, err := sdk.SplitBudgetErrors(err)
	for _, b := range budget {
		log.Warn("bundle over its byte budget", "error", b.Error())
	}
	if err != nil {
		return 0, fmt.Errorf("registering bundles: %w", err)
	}
	var ids []string
	for _, b := range reg.Bundles() {
		ids = append(ids, b.Info.ID)
	}
	if err := cfg.checkBundleSections(ids); err != nil {
		return 0, err
	}
	custom := cfg.CustomBundles()
	entries := cfg.MCP.Tools
	sel, err := selectTools(entries, custom, reg)
	if err != nil {
		return 0, err
	}
	h := newMCPHost(hostOptions{log: log, reg: reg, selected: sel, entries: entries, limits: limits, files: files,
		outputSchemas: cfg.MCP.OutputSchemas, audit: audit,
		maxConcurrent: cfg.MCP.MaxConcurrent, ratePerPeer: cfg.MCP.RateLimitPerPeer,
		callTimeout: time.Duration(cfg.MCP.CallTimeout) * time.Second,
		sourceless:  batchSourcesOf(cfg).none(), thresholds: th})
	h.stop = stop
	elicit.srv.Store(h.srv)
	if batchSourcesOf(cfg).none() {
		// Served all the same (mcp-surface §3: capture_status source
		// "unknown"), but the operator hears it once at startup.
		log.Warn("no source: the server has nothing to read; add -I FILE, -i IFACE or -L ADDR")
	}

	// The subscription poller runs under ctx, only while a connection
	// holds a subscription.
	h.res.start(ctx)
	if transport == "stdio" {
		log.Info("serving MCP over stdio", "tools", len(sel))
		if err := serveStdio(ctx, h, sio.Stdin, sio.Stdout, sio.Stderr); err != nil {
			return 0, err
		}
		return exitOK, nil
	}

	front := newHTTPFront(h, log, verify, maxSessions)
	front.allowedHosts = cfg.MCP.AllowedHost
	if len(front.allowedHosts) == 1 && front.allowedHosts[0] == "" {
		front.allowedHosts = nil
	}
	for _, o := range cfg.MCP.AllowedOrigin {
		if o != "" {
			front.allowedOrigins = append(front.allowedOrigins, o)
		}
	}
	if resURL != nil {
		front.resourceURL = resURL
		front.metadataPath, front.metadataURL = metadataLocation(resURL)
	}
	ln, err := net.Listen("tcp", cfg.MCP.Bind)
	if err != nil {
		return 0, afterDrop(fmt.Errorf("binding %s: %w", cfg.MCP.Bind, err), ranAs)
	}
	scheme := "http"
	if tlsCfg != nil {
		ln = newTLSListener(ln, tlsCfg, log.Named("tls"))
		scheme = "https"
	}
	// Slow and idle connections are bounded (host/httpguard.go).
	guard := newConnGuard(ln, defaultConnCap(), log.Named("http"))
	guarded := newBodyGuard(front, log.Named("http"))
	answered := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded.ServeHTTP(w, r)
		stop.answered(nil) // after a shutdown_server answer: stop (control.go)
	})
	hs := &http.Server{Handler: answered, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout,
		ConnState: guard.connState, ErrorLog: hclogStd(log.Named("http"))}
	log.Info("serving MCP over streamable HTTP", "url", fmt.Sprintf("%s://%s/mcp", scheme, ln.Addr()), "tools", len(sel), "max_connections", guard.max)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(guard) }()
	select {
	case <-ctx.Done():
		// In-flight calls get a second to finish; connections that never
		// sent a request would hold Shutdown for 5 s, so Close follows.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		return exitOK, nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return exitOK, nil
		}
		return 0, err
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

type netURL = url.URL

func hclogStd(l hclog.Logger) *stdlog.Logger {
	return l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
}
