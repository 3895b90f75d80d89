package gen

import (
	"bufio"
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// DSCP values written in the IPv4 header.
const (
	dscpSIP = 24 // CS3
	dscpRTP = 46 // EF
)

// frameWriter turns transport payloads into Ethernet/IPv4/UDP frames and
// writes them as pcap records (microsecond timestamps).
type frameWriter struct {
	pw     *pcapgo.Writer
	start  time.Time
	buf    gopacket.SerializeBuffer
	ipID   map[netip.Addr]uint16
	frames int
	lastAt usec
}

func mac(a netip.Addr) net.HardwareAddr {
	b := a.As4()
	return net.HardwareAddr{0x02, 0x00, b[0], b[1], b[2], b[3]}
}

func (w *frameWriter) write(at usec, src, dst netip.AddrPort, dscp uint8, payload []byte) error {
	if at < w.lastAt {
		return fmt.Errorf("writing frame %d: time goes backwards (%d < %d µs)", w.frames+1, at, w.lastAt)
	}
	w.lastAt = at
	id := w.ipID[src.Addr()]
	w.ipID[src.Addr()] = id + 1
	eth := &layers.Ethernet{SrcMAC: mac(src.Addr()), DstMAC: mac(dst.Addr()), EthernetType: layers.EthernetTypeIPv4}
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: dscp << 2, Id: id, Flags: layers.IPv4DontFragment, TTL: 64,
		Protocol: layers.IPProtocolUDP, SrcIP: net.IP(s4[:]), DstIP: net.IP(d4[:])}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	if err := gopacket.SerializeLayers(w.buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(payload)); err != nil {
		return fmt.Errorf("serializing frame: %w", err)
	}
	data := w.buf.Bytes()
	ts := w.start.Add(time.Duration(at) * time.Microsecond)
	if err := w.pw.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: len(data)}, data); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	w.frames++
	return nil
}

// A source yields events in time order; the merge interleaves all sources.
type source interface {
	at() usec
	emit(w *frameWriter) error // write the current event and move on
	exhausted() bool
}

type sipSource struct {
	msgs  []sipMsg
	i     int
	build func() []sipMsg
	t0    usec
	log   *dialogLog
}

// dialogLog records what a dialog's messages were, as written.
type dialogLog struct {
	messages  int
	requests  map[string]int
	responses map[int]int
	first     usec
	last      usec
}

func (s *sipSource) at() usec {
	if s.msgs == nil {
		return s.t0
	}
	return s.msgs[s.i].at
}
func (s *sipSource) exhausted() bool { return s.msgs != nil && s.i >= len(s.msgs) }
func (s *sipSource) emit(w *frameWriter) error {
	if s.msgs == nil { // build the text lazily, when the dialog starts
		s.msgs = s.build()
		sortMsgs(s.msgs)
		s.build = nil
	}
	m := s.msgs[s.i]
	if err := w.write(m.at, m.src, m.dst, dscpSIP, m.text); err != nil {
		return err
	}
	l := s.log
	if l.messages == 0 {
		l.first = m.at
	}
	l.messages++
	l.last = m.at
	if m.request {
		l.requests[m.method]++
	} else {
		l.responses[m.status]++
	}
	s.msgs[s.i].text = nil
	s.i++
	return nil
}

func (s *rtpSource) exhausted() bool { return s.done }
func (s *rtpSource) emit(w *frameWriter) error {
	b, seq, ts := s.packet()
	if err := w.write(s.arrival, s.sp.src, s.sp.dst, dscpRTP, b); err != nil {
		return err
	}
	s.stats.add(s.arrival, seq, ts, payloadLen)
	s.advance()
	return nil
}

type entry struct {
	src source
	id  int
}
type srcHeap []entry

func (h srcHeap) Len() int { return len(h) }
func (h srcHeap) Less(i, j int) bool {
	a, b := h[i].src.at(), h[j].src.at()
	if a != b {
		return a < b
	}
	return h[i].id < h[j].id
}
func (h srcHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *srcHeap) Push(x any)   { *h = append(*h, x.(entry)) }
func (h *srcHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Generate writes the capture described by cfg to w as a pcap file and
// returns the exact answers about it.
func Generate(cfg Config, w io.Writer) (*Answers, error) {
	p, err := newPlan(cfg)
	if err != nil {
		return nil, fmt.Errorf("planning capture: %w", err)
	}
	hash := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, hash), 1<<20)
	fw := &frameWriter{pw: pcapgo.NewWriter(bw), start: cfg.start(), buf: gopacket.NewSerializeBuffer(), ipID: map[netip.Addr]uint16{}}
	if err := fw.pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return nil, fmt.Errorf("writing pcap header: %w", err)
	}

	h := &srcHeap{}
	callLogs := make([]*dialogLog, len(p.calls))
	regLogs := make([]*dialogLog, len(p.regs))
	rtps := make([]*rtpSource, len(p.streams))
	id := 0
	newLog := func() *dialogLog { return &dialogLog{requests: map[string]int{}, responses: map[int]int{}} }
	for i, c := range p.calls {
		callLogs[i] = newLog()
		*h = append(*h, entry{&sipSource{t0: c.t0, build: c.messages, log: callLogs[i]}, id})
		id++
	}
	for i, g := range p.regs {
		regLogs[i] = newLog()
		*h = append(*h, entry{&sipSource{t0: g.t0, build: g.messages, log: regLogs[i]}, id})
		id++
	}
	for i, s := range p.streams {
		rtps[i] = newRTPSource(s)
		*h = append(*h, entry{rtps[i], id})
		id++
	}
	heap.Init(h)
	for h.Len() > 0 {
		e := (*h)[0]
		if err := e.src.emit(fw); err != nil {
			return nil, err
		}
		if e.src.exhausted() {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("writing capture: %w", err)
	}
	a := buildAnswers(p, callLogs, regLogs, rtps, fw.frames)
	a.Capture.SHA256 = hex.EncodeToString(hash.Sum(nil))
	return a, nil
}

// WriteFiles writes the capture to pcapPath and, when answersPath is not
// empty, the answers as indented JSON to answersPath.
func WriteFiles(cfg Config, pcapPath, answersPath string) (*Answers, error) {
	f, err := os.Create(pcapPath)
	if err != nil {
		return nil, fmt.Errorf("creating capture: %w", err)
	}
	a, err := Generate(cfg, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing capture: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	if answersPath != "" {
		if err := a.WriteJSON(answersPath); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// WriteJSON writes the answers as indented JSON.
func (a *Answers) WriteJSON(path string) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding answers: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing answers: %w", err)
	}
	return nil
}

// ReadAnswers reads answers written by WriteJSON.
func ReadAnswers(path string) (*Answers, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading answers: %w", err)
	}
	var a Answers
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("decoding answers: %w", err)
	}
	return &a, nil
}
