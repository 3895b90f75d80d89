package gen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Kind is what happens to one generated dialog.
type Kind string

// The kinds of INVITE dialog, and of REGISTER dialog, the generator makes.
const (
	KindNormal      Kind = "normal"          // answered, clean media both ways, BYE
	KindLightLoss   Kind = "light_loss"      // answered; both streams lose 0.5-1 % of packets
	KindHeavyLoss   Kind = "heavy_loss"      // answered; one stream loses 12-18 % (degraded MOS)
	KindJitter      Kind = "jitter"          // answered; one stream's arrivals perturbed by up to 12-18 ms
	KindJitterSpike Kind = "jitter_spike"    // answered; one stream's last 3 packets held 1.0-1.2 s (jitter > 50 ms)
	KindOneWay      Kind = "one_way"         // answered; media in one direction only
	KindSlowPDD     Kind = "slow_pdd"        // answered; 180 Ringing 11.5-14 s after the INVITE
	KindLateMedia   Kind = "late_media"      // answered; first RTP 1.2-2.5 s after the 200 OK
	KindInCallAtEnd Kind = "in_call_at_end"  // answered; no BYE before the capture ends
	KindBusy        Kind = "busy_486"        // 100, 180, then 486 Busy Here; no media
	KindUnavailable Kind = "unavailable_503" // 100, then 503 Service Unavailable; no media
	KindCancelled   Kind = "cancelled_487"   // 100, 180, CANCEL, 200 (CANCEL), 487; no media

	KindRegisterChallenged Kind = "register_challenged" // REGISTER, 401, REGISTER with credentials, 200
	KindRegister           Kind = "register"            // REGISTER, 200
)

// callPattern is the mix of INVITE dialogs: every block of 20 calls holds
// each kind this many times, in an order shuffled by the seed.
var callPattern = []struct {
	kind  Kind
	count int
}{
	{KindNormal, 7}, {KindLightLoss, 2}, {KindJitter, 2},
	{KindBusy, 1}, {KindUnavailable, 1}, {KindCancelled, 1},
	{KindOneWay, 1}, {KindSlowPDD, 1}, {KindLateMedia, 1},
	{KindHeavyLoss, 1}, {KindJitterSpike, 1}, {KindInCallAtEnd, 1},
}

// Impairment is what the network does to one stream.
type Impairment string

// Stream impairments.
const (
	ImpNone       Impairment = "none"        // only timer noise under 0.3 ms
	ImpLightLoss  Impairment = "light_loss"  // 0.5-1 % of packets dropped
	ImpHeavyLoss  Impairment = "heavy_loss"  // 12-18 % of packets dropped
	ImpJitter     Impairment = "jitter"      // every arrival delayed by a uniform 0..A, A in 12-18 ms
	ImpJitterTail Impairment = "jitter_tail" // the last 3 packets held 1.0-1.2 s, released 1 ms apart
)

const (
	ptime        = 20 * time.Millisecond
	ptimeUS      = int64(ptime / time.Microsecond)
	samplesPerPk = 160 // 20 ms at 8000 Hz
	clockRate    = 8000
	payloadLen   = 160
	noiseUS      = 300 // timer noise on every arrival, [0, 300) µs
	tailPackets  = 3
)

type codec struct {
	name string
	pt   uint8
}

var (
	pcmu = codec{"PCMU", 0}
	pcma = codec{"PCMA", 8}
)

// Timestamps are int64 microseconds from the capture's Start.
type usec = int64

func us(d time.Duration) usec { return int64(d / time.Microsecond) }

type sipMsg struct {
	at       usec
	src, dst netip.AddrPort
	text     []byte
	request  bool
	method   string // request method, or the CSeq method of a response
	status   int
	reason   string
}

type callPlan struct {
	idx      int
	kind     Kind
	callID   string
	codec    codec
	caller   netip.AddrPort // signaling
	callee   netip.AddrPort
	callerRT netip.AddrPort // media
	calleeRT netip.AddrPort
	fromNum  string
	toNum    string
	fromTag  string
	toTag    string
	brInvite string
	brAck    string
	brBye    string
	brCancel string
	sessA    uint64
	sessB    uint64
	byCallee bool
	t0       usec
	t100     usec
	t180     usec // 0 when no 180 is sent
	tFinal   usec // 200, 486, 503 or 487
	tAck     usec
	tCancel  usec
	tCanc200 usec
	tBye     usec // 0 when no BYE is sent
	tBye200  usec
	tEnd     usec // end of the conversation (last send time bound)
	streams  []*streamPlan
}

type regPlan struct {
	idx        int
	kind       Kind
	callID     string
	ua         netip.AddrPort
	registrar  netip.AddrPort
	user       string
	fromTag    string
	br1, br2   string
	nonce      string
	cnonce     string
	t1, t2, t3 usec // 401 (challenged), second REGISTER, final 200
	t0         usec
}

type streamPlan struct {
	id        int
	call      *callPlan
	fromCall  bool // caller to callee
	src, dst  netip.AddrPort
	ssrc      uint32
	seq0      uint16
	ts0       uint32
	codec     codec
	start     usec // send time of packet 0
	n         int  // packets sent
	drops     []int
	imp       Impairment
	jitterAmp usec
	tailHold  usec
	rng       *rand.Rand
}

type plan struct {
	cfg     Config
	calls   []*callPlan
	regs    []*regPlan
	streams []*streamPlan
}

func between(r *rand.Rand, lo, hi time.Duration) usec {
	a, b := us(lo), us(hi)
	if b <= a {
		return a
	}
	return a + r.Int64N(b-a+1)
}

func hexID(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

// Address pools: TEST-NET ranges (RFC 5737), so nothing reads as private.
func callerHost(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i%16)}) }
func calleeHost(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(20 + i%8)}) }
func regHost(i int) netip.Addr    { return netip.AddrFrom4([4]byte{192, 0, 2, byte(100 + i%50)}) }

var registrarAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 10}), 5060)

func newPlan(cfg Config) (*plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5ec0bad5ee))
	p := &plan{cfg: cfg}

	kinds := make([]Kind, 0, cfg.Calls)
	for len(kinds) < cfg.Calls {
		for _, e := range callPattern {
			for j := 0; j < e.count; j++ {
				kinds = append(kinds, e.kind)
			}
		}
	}
	// Shuffle within each block of 20 so every block keeps the mix.
	block := 0
	for _, e := range callPattern {
		block += e.count
	}
	for lo := 0; lo < len(kinds); lo += block { // len(kinds) is a multiple of block
		seg := kinds[lo : lo+block]
		r.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
	}
	kinds = kinds[:cfg.Calls]

	usedSSRC := map[uint32]bool{}
	callerPorts := map[netip.Addr]uint16{}
	calleePorts := map[netip.Addr]uint16{}
	nextPort := func(m map[netip.Addr]uint16, a netip.Addr, base uint16) uint16 {
		p, ok := m[a]
		if !ok {
			p = base
		}
		m[a] = p + 2
		return p
	}

	for i := 0; i < cfg.Calls; i++ {
		c := &callPlan{idx: i, kind: kinds[i]}
		if r.IntN(2) == 0 {
			c.codec = pcmu
		} else {
			c.codec = pcma
		}
		ca, cb := callerHost(i), calleeHost(i/16+i)
		c.caller = netip.AddrPortFrom(ca, 5060)
		c.callee = netip.AddrPortFrom(cb, 5060)
		c.callerRT = netip.AddrPortFrom(ca, nextPort(callerPorts, ca, 16384))
		c.calleeRT = netip.AddrPortFrom(cb, nextPort(calleePorts, cb, 20000))
		c.callID = fmt.Sprintf("%s@%s", hexID(r, 24), ca)
		c.fromNum = fmt.Sprintf("+1212555%04d", i%10000)
		c.toNum = fmt.Sprintf("+1415555%04d", (i*7+3)%10000)
		c.fromTag = hexID(r, 10)
		c.toTag = hexID(r, 10)
		c.brInvite = "z9hG4bK" + hexID(r, 16)
		c.brAck = "z9hG4bK" + hexID(r, 16)
		c.brBye = "z9hG4bK" + hexID(r, 16)
		c.brCancel = c.brInvite // CANCEL shares the INVITE's branch (RFC 3261 §9.1)
		c.sessA = 1_000_000_000 + r.Uint64N(1_000_000_000)
		c.sessB = 1_000_000_000 + r.Uint64N(1_000_000_000)
		c.byCallee = r.IntN(10) < 3

		c.t0 = int64(i) * us(cfg.Spacing)
		if cfg.Spacing > time.Microsecond {
			c.t0 += r.Int64N(us(cfg.Spacing) / 2)
		}
		c.t100 = c.t0 + between(r, 10*time.Millisecond, 60*time.Millisecond)
		pdd := between(r, 150*time.Millisecond, 1500*time.Millisecond)
		alert := between(r, 500*time.Millisecond, 2000*time.Millisecond)
		if c.kind == KindSlowPDD {
			pdd = between(r, 11500*time.Millisecond, 14000*time.Millisecond)
		}
		talk := us(cfg.Duration)

		switch c.kind {
		case KindBusy:
			c.t180 = c.t0 + pdd
			c.tFinal = c.t180 + between(r, 2*time.Second, 8*time.Second)
			c.tAck = c.tFinal + between(r, 5*time.Millisecond, 40*time.Millisecond)
			p.calls = append(p.calls, c)
			continue
		case KindUnavailable:
			c.tFinal = c.t100 + between(r, 30*time.Millisecond, 300*time.Millisecond)
			c.tAck = c.tFinal + between(r, 5*time.Millisecond, 40*time.Millisecond)
			p.calls = append(p.calls, c)
			continue
		case KindCancelled:
			c.t180 = c.t0 + pdd
			c.tCancel = c.t180 + between(r, 3*time.Second, 10*time.Second)
			c.tCanc200 = c.tCancel + between(r, 5*time.Millisecond, 30*time.Millisecond)
			c.tFinal = c.tCanc200 + between(r, time.Millisecond, 10*time.Millisecond)
			c.tAck = c.tFinal + between(r, 5*time.Millisecond, 40*time.Millisecond)
			p.calls = append(p.calls, c)
			continue
		}

		// Answered calls.
		c.t180 = c.t0 + pdd
		c.tFinal = c.t180 + alert
		c.tAck = c.tFinal + between(r, 5*time.Millisecond, 40*time.Millisecond)
		c.tEnd = c.tFinal + talk
		calleeStart := c.tFinal + between(r, 0, 20*time.Millisecond)
		callerStart := c.tAck + between(r, 0, 20*time.Millisecond)
		if c.kind == KindLateMedia {
			calleeStart += between(r, 1200*time.Millisecond, 2500*time.Millisecond)
			callerStart += between(r, 1200*time.Millisecond, 2500*time.Millisecond)
		}
		dirs := []bool{true, false} // caller->callee, callee->caller
		if c.kind == KindOneWay {
			dirs = []bool{r.IntN(2) == 0}
		}
		impaired := r.IntN(2) // which direction carries a one-stream impairment
		if cfg.NoMedia {
			dirs = nil
		}
		for d, fromCaller := range dirs {
			s := &streamPlan{id: len(p.streams), call: c, fromCall: fromCaller, codec: c.codec, imp: ImpNone}
			s.rng = rand.New(rand.NewPCG(cfg.Seed, 0xa11ce000+uint64(s.id)))
			if fromCaller {
				s.src, s.dst, s.start = c.callerRT, c.calleeRT, callerStart
			} else {
				s.src, s.dst, s.start = c.calleeRT, c.callerRT, calleeStart
			}
			for {
				s.ssrc = r.Uint32()
				if s.ssrc != 0 && !usedSSRC[s.ssrc] {
					break
				}
			}
			usedSSRC[s.ssrc] = true
			s.seq0 = uint16(r.Uint32())
			if s.id == 1 {
				s.seq0 = 65536 - 100 // one stream always wraps its sequence number
			}
			s.ts0 = r.Uint32()
			s.n = int((c.tEnd - s.start + ptimeUS - 1) / ptimeUS)
			if s.n < 10 {
				s.n = 10
			}
			switch {
			case c.kind == KindLightLoss:
				s.imp = ImpLightLoss
			case c.kind == KindHeavyLoss && d == impaired:
				s.imp = ImpHeavyLoss
			case c.kind == KindJitter && d == impaired:
				s.imp = ImpJitter
			case c.kind == KindJitterSpike && d == impaired:
				s.imp = ImpJitterTail
			}
			switch s.imp {
			case ImpLightLoss:
				s.drops = pickDrops(s.rng, s.n, 0.005+s.rng.Float64()*0.005)
			case ImpHeavyLoss:
				s.drops = pickDrops(s.rng, s.n, 0.12+s.rng.Float64()*0.06)
			case ImpJitter:
				s.jitterAmp = between(s.rng, 12*time.Millisecond, 18*time.Millisecond)
			case ImpJitterTail:
				s.tailHold = between(s.rng, 1000*time.Millisecond, 1200*time.Millisecond)
			}
			c.streams = append(c.streams, s)
			p.streams = append(p.streams, s)
		}
		if c.kind != KindInCallAtEnd {
			last := c.tEnd
			for _, s := range c.streams {
				last = max(last, s.lastArrivalBound())
			}
			c.tBye = last + between(r, 20*time.Millisecond, 60*time.Millisecond)
			c.tBye200 = c.tBye + between(r, 10*time.Millisecond, 50*time.Millisecond)
		}
		p.calls = append(p.calls, c)
	}

	span := int64(cfg.Calls)*us(cfg.Spacing) + us(cfg.Duration)
	if span <= 0 {
		span = us(time.Second)
	}
	for i := 0; i < cfg.Registers; i++ {
		g := &regPlan{idx: i, kind: KindRegisterChallenged}
		if i%3 == 2 {
			g.kind = KindRegister
		}
		h := regHost(i)
		g.ua = netip.AddrPortFrom(h, 5060)
		g.registrar = registrarAddr
		g.user = fmt.Sprintf("2%03d", i%1000)
		g.callID = fmt.Sprintf("%s@%s", hexID(r, 20), h)
		g.fromTag = hexID(r, 10)
		g.br1 = "z9hG4bK" + hexID(r, 16)
		g.br2 = "z9hG4bK" + hexID(r, 16)
		g.nonce = hexID(r, 32)
		g.cnonce = hexID(r, 16)
		g.t0 = r.Int64N(span)
		g.t1 = g.t0 + between(r, 5*time.Millisecond, 40*time.Millisecond)
		if g.kind == KindRegisterChallenged {
			g.t2 = g.t1 + between(r, 20*time.Millisecond, 80*time.Millisecond)
			g.t3 = g.t2 + between(r, 5*time.Millisecond, 40*time.Millisecond)
		} else {
			g.t3 = g.t1
		}
		p.regs = append(p.regs, g)
	}
	return p, nil
}

// pickDrops chooses round(rate*n) distinct packet indices to drop, never the
// first or the last packet (so expected = sent, as RFC 3550 counts it).
func pickDrops(r *rand.Rand, n int, rate float64) []int {
	k := int(rate*float64(n) + 0.5)
	k = max(k, 1)
	k = min(k, n-2)
	chosen := map[int]bool{}
	for len(chosen) < k {
		chosen[1+r.IntN(n-2)] = true
	}
	out := make([]int, 0, k)
	for i := 1; i < n-1; i++ {
		if chosen[i] {
			out = append(out, i)
		}
	}
	return out
}

// lastArrivalBound is a time no packet of the stream arrives after.
func (s *streamPlan) lastArrivalBound() usec {
	lastSend := s.start + int64(s.n-1)*ptimeUS
	if s.imp == ImpJitterTail {
		return s.start + int64(s.n-tailPackets)*ptimeUS + s.tailHold + tailPackets*1000 + noiseUS
	}
	return lastSend + s.jitterAmp + noiseUS
}
