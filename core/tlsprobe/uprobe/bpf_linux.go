//go:build linux && amd64

// Package uprobe is the kernel side of core/tlsprobe: eBPF programs
// written as instructions in Go (cilium/ebpf's asm package: no cgo, no C
// toolchain) attached as uprobes to a TLS library's write and read
// functions, and the ring buffer they fill. The libraries come from
// tlsprobe's /proc scan; the records go to its framer. It is the one core
// package that imports cilium/ebpf (tests/imports_test.go).
package uprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/sipnab/sipnab/core/tlsprobe"
)

// The eBPF side, written as instructions in Go (cilium/ebpf's asm
// package): no C toolchain, no generated object. Four programs per
// library: an entry probe on the write and read functions stashes the
// SSL pointer and the buffer address by thread (pid_tgid); the return
// probe reads the return value (the bytes written or read, RFC-free:
// OpenSSL's SSL_write(3)/SSL_read(3) contract, wolfSSL's the same), and
// when it is positive copies up to tlsprobe.MaxCopy bytes of the buffer into a ring
// buffer record. The buffer is read at return for both directions: a
// write's bytes are only known written once it returns > 0 (a retried
// SSL_write passes the same buffer again), a read's only exist then.
//
// Record layout (little-endian, amd64):
//
//	0  u64 pid_tgid   (tgid << 32 | tid)
//	8  u64 ssl        the SSL* the call was made on
//	16 u32 len        the return value (bytes written/read)
//	20 u32 dir        0 write, 1 read
//	24 u32 copied     bytes copied below (≤ MaxCopy)
//	28 i32 read_err   bpf_probe_read_user's result (0: copied)
//	32 data[tlsprobe.MaxCopy]
const (
	recHeader = 32
	recSize   = recHeader + tlsprobe.MaxCopy
	// ringBytes is the ring buffer's size (a power of two of pages):
	// about five hundred records in flight.
	ringBytes = 8 << 20
	// stashEntries caps the per-thread entry stash (a thread whose call
	// never returns leaves one entry, overwritten by its next call).
	stashEntries = 16384
)

// x86-64 struct pt_regs offsets (arch/x86/include/asm/ptrace.h).
const (
	regAX = 80
	regCX = 88
	regSI = 104
	regDI = 112
)

// Supported reports whether this build can attach probes (linux/amd64).
const Supported = true

func entryProg(stash *ebpf.Map) asm.Instructions {
	// value: ssl (rdi) at fp-40, buf (rsi) at fp-32, the _ex variants'
	// size_t *written/*readbytes (rcx) at fp-24; key pid_tgid at fp-8
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, regDI, asm.DWord),
		asm.StoreMem(asm.RFP, -40, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, regSI, asm.DWord),
		asm.StoreMem(asm.RFP, -32, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, regCX, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, stash.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -40),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	}
}

// returnProg reads the call's length: the return value (SSL_write,
// SSL_read: bytes, ≤ 0 failure), or for the _ex variants (return 1 on
// success) the size_t their last argument points at.
func returnProg(stash, ring, lost *ebpf.Map, dir int32, ex bool) asm.Instructions {
	length := asm.Instructions{
		// r9 = (s32) return value; nothing to read unless > 0
		asm.LoadMem(asm.R9, asm.R6, regAX, asm.DWord),
		asm.LSh.Imm(asm.R9, 32),
		asm.ArSh.Imm(asm.R9, 32),
		asm.JSLE.Imm(asm.R9, 0, "out"),
	}
	if ex {
		length = asm.Instructions{
			asm.LoadMem(asm.R9, asm.R6, regAX, asm.DWord),
			asm.JNE.Imm32(asm.R9, 1, "out"),
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, -48),
			asm.Mov.Imm(asm.R2, 8),
			asm.LoadMem(asm.R3, asm.RFP, -40, asm.DWord),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R9, asm.RFP, -48, asm.DWord),
			asm.JEq.Imm(asm.R9, 0, "out"),
		}
	}
	return append(append(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, stash.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		// copy the stash (ssl at 0, buf at 8, length pointer at 16) to
		// the stack (fp-16, fp-24, fp-40), then drop it
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord),
		asm.StoreMem(asm.RFP, -40, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, stash.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapDeleteElem.Call(),
	}, length...), asm.Instructions{
		asm.LoadMapPtr(asm.R1, ring.FD()),
		asm.Mov.Imm(asm.R2, recSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.DWord),
		asm.StoreMem(asm.R6, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, -16, asm.DWord),
		asm.StoreMem(asm.R6, 8, asm.R1, asm.DWord),
		asm.StoreMem(asm.R6, 16, asm.R9, asm.Word),
		asm.StoreImm(asm.R6, 20, int64(dir), asm.Word),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.JLE.Imm(asm.R2, tlsprobe.MaxCopy, "sized"),
		asm.Mov.Imm(asm.R2, tlsprobe.MaxCopy),
		asm.StoreMem(asm.R6, 24, asm.R2, asm.Word).WithSymbol("sized"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Add.Imm(asm.R1, recHeader),
		asm.LoadMem(asm.R3, asm.RFP, -24, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.StoreMem(asm.R6, 28, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("out"),
		// the ring was full: count the call (lost[0] += 1)
		asm.StoreImm(asm.RFP, -32, 0, asm.Word).WithSymbol("drop"),
		asm.LoadMapPtr(asm.R1, lost.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -32),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}...)
}

// Probe is a set of attached uprobes and their ring buffer reader.
type Probe struct {
	objs       []interface{ Close() error }
	links      []link.Link
	rd         *ringbuf.Reader
	lost       *ebpf.Map
	done       chan struct{}
	closed     atomic.Bool
	once       sync.Once
	final      uint64 // Lost as read just before the maps were freed
	errMu      sync.Mutex
	err        error
	unreadable atomic.Uint64
}

// Attach loads the programs and attaches them to every target, then reads
// records until Close, handing each to fn on the reader goroutine. Any
// failure detaches what was attached and returns the error: nothing stays
// in the kernel.
func Attach(targets []tlsprobe.Target, fn func(tlsprobe.Record)) (p *Probe, err error) {
	if len(targets) == 0 {
		return nil, errors.New("no library to probe")
	}
	p = &Probe{done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.release()
			p = nil
		}
	}()
	mk := func(s *ebpf.MapSpec) (*ebpf.Map, error) {
		m, err := ebpf.NewMap(s)
		if err != nil {
			return nil, fmt.Errorf("creating BPF map %s: %w", s.Name, err)
		}
		p.objs = append(p.objs, m)
		return m, nil
	}
	ring, err := mk(&ebpf.MapSpec{Name: "sipnab_tls_rb", Type: ebpf.RingBuf, MaxEntries: ringBytes})
	if err != nil {
		return nil, err
	}
	lost, err := mk(&ebpf.MapSpec{Name: "sipnab_tls_lost", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, err
	}
	p.lost = lost
	// entry and return programs of each kind: write, read, write_ex, read_ex
	type kind struct {
		dir   int32
		ex    bool
		entry *ebpf.Program
		ret   *ebpf.Program
	}
	kinds := []*kind{{dir: tlsprobe.DirWrite}, {dir: tlsprobe.DirRead}, {dir: tlsprobe.DirWrite, ex: true}, {dir: tlsprobe.DirRead, ex: true}}
	for _, k := range kinds {
		stash, err := mk(&ebpf.MapSpec{Name: "sipnab_tls_st", Type: ebpf.Hash, KeySize: 8, ValueSize: 24, MaxEntries: stashEntries})
		if err != nil {
			return nil, err
		}
		for i, ins := range []asm.Instructions{entryProg(stash), returnProg(stash, ring, lost, k.dir, k.ex)} {
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "sipnab_tls", Type: ebpf.Kprobe, License: "GPL", Instructions: ins})
			if err != nil {
				return nil, fmt.Errorf("loading BPF program: %w", err)
			}
			p.objs = append(p.objs, prog)
			if i == 0 {
				k.entry = prog
			} else {
				k.ret = prog
			}
		}
	}
	for _, t := range targets {
		ex, err := link.OpenExecutable(t.Path)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", t.Path, err)
		}
		for i, sym := range []string{t.WriteSymbol, t.ReadSymbol, t.WriteExSymbol, t.ReadExSymbol} {
			if sym == "" {
				continue // a library without the _ex variants (OpenSSL before 1.1.1, wolfSSL)
			}
			l, err := ex.Uprobe(sym, kinds[i].entry, nil)
			if err != nil {
				return nil, fmt.Errorf("attaching to %s in %s: %w", sym, t.Path, err)
			}
			p.links = append(p.links, l)
			if l, err = ex.Uretprobe(sym, kinds[i].ret, nil); err != nil {
				return nil, fmt.Errorf("attaching to the return of %s in %s: %w", sym, t.Path, err)
			}
			p.links = append(p.links, l)
		}
	}
	p.rd, err = ringbuf.NewReader(ring)
	if err != nil {
		return nil, fmt.Errorf("reading the ring buffer: %w", err)
	}
	go p.read(fn)
	return p, nil
}

func (p *Probe) read(fn func(tlsprobe.Record)) {
	defer close(p.done)
	for {
		rec, err := p.rd.Read()
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !p.closed.Load() {
				p.errMu.Lock()
				p.err = err
				p.errMu.Unlock()
			}
			return
		}
		if r, ok := decode(rec.RawSample); ok {
			fn(r)
		} else {
			p.unreadable.Add(1)
		}
	}
}

// decode reads one ring record (layout above); ok is false when the
// buffer could not be read or the record is short.
func decode(b []byte) (tlsprobe.Record, bool) {
	if len(b) < recHeader {
		return tlsprobe.Record{}, false
	}
	le := binary.LittleEndian
	pt := le.Uint64(b[0:])
	r := tlsprobe.Record{PID: uint32(pt >> 32), TID: uint32(pt), SSL: le.Uint64(b[8:]), Len: le.Uint32(b[16:]), Dir: int(le.Uint32(b[20:]))}
	n := int(le.Uint32(b[24:]))
	if int32(le.Uint32(b[28:])) != 0 || n > tlsprobe.MaxCopy || recHeader+n > len(b) {
		return r, false
	}
	r.Data = append([]byte(nil), b[recHeader:recHeader+n]...)
	r.Truncated = int(r.Len) > n
	return r, true
}

// Unreadable counts records whose buffer bpf_probe_read_user could not
// read (a page not resident): counted, never delivered.
func (p *Probe) Unreadable() uint64 { return p.unreadable.Load() }

// Lost returns the calls the kernel side could not record (the ring was
// full).
func (p *Probe) Lost() uint64 {
	if p.closed.Load() {
		return p.final
	}
	var v uint64
	if p.lost != nil {
		_ = p.lost.Lookup(uint32(0), &v)
	}
	return v
}

// Err is the reader's failure, if it stopped on its own.
func (p *Probe) Err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// Done is closed when the reader has stopped.
func (p *Probe) Done() <-chan struct{} { return p.done }

// Close detaches every probe, then stops the reader and frees the maps
// and programs. Safe to call more than once.
func (p *Probe) Close() error {
	var err error
	p.once.Do(func() {
		p.final = p.Lost()
		p.closed.Store(true)
		err = p.release()
		if p.rd != nil {
			<-p.done
		}
	})
	return err
}

func (p *Probe) release() error {
	var errs []error
	for _, l := range p.links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	p.links = nil
	if p.rd != nil {
		if err := p.rd.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(p.objs) - 1; i >= 0; i-- {
		if err := p.objs[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	p.objs = nil
	return errors.Join(errs...)
}
