package host

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/detect"
)

// detectConfig arms the security detectors (core/detect) from
// --detect-scanner, --reg-flood, --digest-leak, --fraud-detect and
// --findings-history.
// They run on the single-core path only (engine.md §13): with --cores 2
// or more they are reported armed and not running, and startEngine warns.
func detectConfig(cfg *Config) detect.Config {
	dc := detect.Config{
		Scanner: cfg.Detect.Scanner, RegFlood: cfg.Detect.RegFlood, Digest: cfg.Detect.DigestLeak, Fraud: cfg.Detect.FraudDetect,
		History: cfg.Detect.FindingsHistory,
	}
	if cfg.Cores >= 2 && (dc.Scanner || dc.RegFlood || dc.Digest || dc.Fraud) {
		dc.Disabled = fmt.Sprintf("the detectors run only on the single-core path (engine.md §13) and this run has --cores %d: nothing was observed", cfg.Cores)
	}
	return dc
}

// fail2banLog is the --fail2ban-log channel: one line per finding,
//
//	<RFC 3339 wall time> sipnab[<pid>]: [ALERT] <rule_name> src=<ip> <detail>
//
// the line generate_fail2ban_rule's filters match (docs/detectors.md),
// the alert line made by detect.Finding.AlertLine.
type fail2banLog struct {
	f   *os.File
	pid string
	log hclog.Logger
}

func openFail2banLog(path string, log hclog.Logger) (*fail2banLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("--fail2ban-log: %w", err)
	}
	return &fail2banLog{f: f, pid: strconv.Itoa(os.Getpid()), log: log}, nil
}

// Fail2banLine renders one finding as the channel writes it at now.
func Fail2banLine(now time.Time, pid string, f detect.Finding) string {
	return now.UTC().Format("2006-01-02T15:04:05Z") + " sipnab[" + pid + "]: " + f.AlertLine() + "\n"
}

func (l *fail2banLog) write(f detect.Finding) {
	if _, err := l.f.WriteString(Fail2banLine(time.Now(), l.pid, f)); err != nil {
		l.log.Warn("--fail2ban-log: write failed", "error", err)
	}
}

func (l *fail2banLog) close() {
	if l != nil {
		_ = l.f.Close()
	}
}
