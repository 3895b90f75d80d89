package live

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
)

// MaxFilterInstructions is the longest program a filter file may hold (the
// kernel's own limit for classic BPF).
const MaxFilterInstructions = 4096

// ParseFilterFile reads a classic BPF program in the decimal form
// `tcpdump -ddd EXPR` prints: the instruction count on the first line,
// then one instruction a line, "code jt jf k" (docs/capture-sources.md).
// Every value is checked against its field's width, the count against the
// lines and MaxFilterInstructions, and the program must run in x/net/bpf's
// machine (jumps inside it, no division by zero, a return at the end, no
// kernel extension but the packet length); the error names the line.
func ParseFilterFile(text string) ([]bpf.Instruction, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	line, count := 0, -1
	var prog []bpf.Instruction
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if count < 0 {
			n, err := strconv.Atoi(f[0])
			if len(f) != 1 || err != nil || n < 1 || n > MaxFilterInstructions {
				return nil, fmt.Errorf("line %d: want the instruction count (1 to %d), as tcpdump -ddd prints it first", line, MaxFilterInstructions)
			}
			count = n
			continue
		}
		if len(prog) == count {
			return nil, fmt.Errorf("line %d: more instructions than the %d announced", line, count)
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want four numbers \"code jt jf k\"", line)
		}
		var v [4]uint64
		for i, bits := range []int{16, 8, 8, 32} {
			n, err := strconv.ParseUint(f[i], 10, bits)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a %d-bit number", line, f[i], bits)
			}
			v[i] = n
		}
		raw := bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}
		prog = append(prog, raw.Disassemble())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, fmt.Errorf("empty filter file: want tcpdump -ddd output")
	}
	if len(prog) != count {
		return nil, fmt.Errorf("%d instructions, %d announced", len(prog), count)
	}
	if _, err := bpf.NewVM(prog); err != nil {
		return nil, fmt.Errorf("the program cannot run: %w", err)
	}
	return prog, nil
}
