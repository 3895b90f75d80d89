package lint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sipnab/sipnab/core/regfile"
)

// SuppressionFileName is the file discovery looks for beside a capture.
const SuppressionFileName = ".sipnablint"

// Bounds of a suppression file.
const (
	// MaxSuppressionBytes caps the bytes read from a suppression file.
	MaxSuppressionBytes = 64 << 10
	// MaxPatterns caps the patterns one file may hold.
	MaxPatterns = 1024
)

// Suppression is a parsed suppression list: exact rule ids, or prefixes
// ending in "*". Suppression decides what is reported, never what runs.
type Suppression struct {
	// File names the file the patterns came from ("" when none).
	File string
	// Patterns in file order, without repeats.
	Patterns []string
}

// Matches reports whether a pattern covers the rule id.
func (s *Suppression) Matches(id string) bool {
	if s == nil {
		return false
	}
	for _, p := range s.Patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(id, prefix) {
				return true
			}
		} else if p == id {
			return true
		}
	}
	return false
}

// ParseSuppression reads a suppression list: patterns separated by commas,
// spaces or newlines; "#" starts a comment that runs to the end of the line.
// A pattern is an exact rule id or a prefix ending in "*" (upper-case
// letters, digits, '.' and '-'; '*' only at the end). Anything else is an
// error naming the line, because a pattern that silently matches nothing
// leaves on a rule the operator meant to switch off.
func ParseSuppression(data []byte) ([]string, error) {
	if len(data) > MaxSuppressionBytes {
		return nil, fmt.Errorf("suppression list is %d bytes, more than %d", len(data), MaxSuppressionBytes)
	}
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxSuppressionBytes+1)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\f' || r == '\v'
		}) {
			if err := checkPattern(tok); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			if seen[tok] {
				continue
			}
			if len(out) >= MaxPatterns {
				return nil, fmt.Errorf("line %d: more than %d patterns", line, MaxPatterns)
			}
			seen[tok] = true
			out = append(out, tok)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading suppression list: %w", err)
	}
	return out, nil
}

func checkPattern(p string) error {
	body, _ := strings.CutSuffix(p, "*")
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			shown := p
			if len(shown) > 64 {
				shown = shown[:64] + "..."
			}
			return fmt.Errorf("pattern %q: want a rule id or a PREFIX* of upper-case letters, digits, '.' and '-'", shown)
		}
	}
	return nil
}

// ReadSuppression reads and parses a suppression file (a regular file).
func ReadSuppression(path string) (*Suppression, error) {
	// regfile.Open: a FIFO or device named .sipnablint is refused, never
	// waited on.
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading suppression file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSuppressionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading suppression file %s: %w", path, err)
	}
	pats, err := ParseSuppression(data)
	if err != nil {
		return nil, fmt.Errorf("suppression file %s: %w", path, err)
	}
	return &Suppression{File: path, Patterns: pats}, nil
}

// DiscoverSuppression finds the suppression file that applies to a capture
// file: the nearest .sipnablint in the capture's directory or an ancestor,
// up to and including the project root (the nearest ancestor holding a .git
// entry) and never beyond it. A capture outside any project adopts nothing,
// because inheriting a stranger's list would switch off rules nobody here
// turned off. It returns "" when no file applies.
func DiscoverSuppression(capturePath string) (string, error) {
	abs, err := filepath.Abs(capturePath)
	if err != nil {
		return "", fmt.Errorf("locating capture %s: %w", capturePath, err)
	}
	start := filepath.Dir(abs)
	root := ""
	for d := start; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if root == "" {
		return "", nil
	}
	for d := start; ; d = filepath.Dir(d) {
		p := filepath.Join(d, SuppressionFileName)
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err == nil:
			return "", fmt.Errorf("suppression file %s is not a regular file", p)
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("looking for a suppression file: %w", err)
		}
		if d == root {
			return "", nil
		}
	}
}
