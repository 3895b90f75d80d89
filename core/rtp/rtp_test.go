package rtp

import (
	"encoding/hex"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		pkt     string
		wantErr bool
		want    Header
	}{
		{
			name: "pcma with marker",
			pkt:  "80880001000000a0d2bd4e3e" + "d5d5d5d5",
			want: Header{Version: 2, Marker: true, PayloadType: 8, Seq: 1, Timestamp: 160, SSRC: 0xd2bd4e3e, PayloadOffset: 12, PayloadLen: 4},
		},
		{
			name: "two csrcs and an extension of one word",
			pkt:  "92000102000000010000000a" + "00000001" + "00000002" + "bede0001" + "11223344" + "ff",
			want: Header{Version: 2, Extension: true, CSRCCount: 2, Seq: 0x102, Timestamp: 1, SSRC: 10, PayloadOffset: 12 + 8 + 8, PayloadLen: 1},
		},
		{
			name: "padding removed from payload",
			pkt:  "a0000001000000010000000a" + "aabb0003",
			want: Header{Version: 2, Padding: true, Seq: 1, Timestamp: 1, SSRC: 10, PayloadOffset: 12, PayloadLen: 1},
		},
		{name: "short", pkt: "8000", wantErr: true},
		{name: "version 1", pkt: "40000001000000010000000a", wantErr: true},
		{name: "rtcp sender report", pkt: "80c8000644c61afb001cd3b3", wantErr: true},
		{name: "csrc list past end", pkt: "8f000001000000010000000a", wantErr: true},
		{name: "extension past end", pkt: "90000001000000010000000a" + "bede00ff", wantErr: true},
		{name: "padding zero", pkt: "a0000001000000010000000a" + "00", wantErr: true},
		{name: "padding larger than payload", pkt: "a0000001000000010000000a" + "0009", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(mustHex(t, tc.pkt))
			if (err != nil) != tc.wantErr {
				t.Fatalf("got err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlausiblePayloadType(t *testing.T) {
	tests := []struct {
		pt   uint8
		want bool
	}{{0, true}, {8, true}, {13, true}, {18, true}, {34, true}, {96, true}, {127, true}, {1, false}, {21, false}, {72, false}, {76, false}, {90, false}}
	for _, tc := range tests {
		if got := PlausiblePayloadType(tc.pt); got != tc.want {
			t.Errorf("PlausiblePayloadType(%d): got %v, want %v", tc.pt, got, tc.want)
		}
	}
}

// Datagrams below are copied from the public captures (udp.payload).
const (
	// SIP_CALL_RTP_G711 frame 504: SR with one block + RR with one block.
	srrr = "81c8000cd2bd4e3ec59286d4e6e978d5000001400000000200000140d2bd4e3e00000000000200020000000086d4e6e90000000181c90007d2bd4e3e0000000000000000000000000000000086d4e6e900000001"
	// Asterisk_ZFONE_XLITE.pcap frame 21: empty RR + SDES with CNAME and a private item.
	rrsdes = "80c90001b72a710481ca001eb72a7104013d443746424535314639343641343042363935444431373630443645354134304140756e697175652e7a413043444544443831423942344630442e6f7267083110782d7274702d73657373696f6e2d696438343030463133424632414434323239384636324631344533453942333739420000"
	// sip-over-tcp.pcap frame 17: SR with a block + SDES.
	srsdes = "81c8000c5a3361b30026481d99580fb105b6fe8600000001000000a042f433d4000000000000d44400000000092530620000041881ca00035a3361b30103633000000000"
)

func TestParseCompound(t *testing.T) {
	t.Run("sr and rr", func(t *testing.T) {
		ps, err := ParseCompound(mustHex(t, srrr))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 2 {
			t.Fatalf("got %d packets, want 2", len(ps))
		}
		sr := ps[0]
		if sr.Type != RTCPSR || sr.SSRC != 0xd2bd4e3e || !sr.HasSender || sr.Sender.PacketCount != 2 || sr.Sender.OctetCount != 320 {
			t.Errorf("got sr %+v", sr)
		}
		if len(sr.Reports) != 1 || sr.Reports[0].SSRC != 0xd2bd4e3e || sr.Reports[0].HighestSeq != 0x20002 || sr.Reports[0].LSR != 0x86d4e6e9 || sr.Reports[0].DLSR != 1 {
			t.Errorf("got sr blocks %+v", sr.Reports)
		}
		rr := ps[1]
		if rr.Type != RTCPRR || len(rr.Reports) != 1 || rr.Reports[0].CumulativeLost != 0 {
			t.Errorf("got rr %+v", rr)
		}
	})
	t.Run("rr and sdes", func(t *testing.T) {
		ps, err := ParseCompound(mustHex(t, rrsdes))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 2 || ps[1].Type != RTCPSDES || len(ps[1].CNAMEs) != 1 {
			t.Fatalf("got %+v", ps)
		}
		if got, want := ps[1].CNAMEs[0].CNAME, "D7FBE51F946A40B695DD1760D6E5A40A@unique.zA0CDEDD81B9B4F0D.org"; got != want {
			t.Errorf("got cname %q, want %q", got, want)
		}
	})
	t.Run("sr and sdes", func(t *testing.T) {
		ps, err := ParseCompound(mustHex(t, srsdes))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 2 || ps[0].Reports[0].SSRC != 0x42f433d4 || ps[0].Reports[0].Jitter != 0 || ps[0].Reports[0].HighestSeq != 0xd444 {
			t.Fatalf("got %+v", ps)
		}
		if ps[1].CNAMEs[0].CNAME != "c0" {
			t.Errorf("got cname %q, want c0", ps[1].CNAMEs[0].CNAME)
		}
	})
	t.Run("xr voip metrics", func(t *testing.T) {
		// XR, sender 0x11111111, one VoIP metrics block about 0x22222222:
		// loss 26/256, RTT 180 ms, MOS-LQ 41.
		pkt := "80cf000a" + "11111111" + "07000008" + "22222222" + "1a000000" + "00000000" + "00b40014" + "7f7f7f7f" + "5d5d2929" + "00000000" + "00000000"
		ps, err := ParseCompound(mustHex(t, pkt))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || len(ps[0].VoIP) != 1 {
			t.Fatalf("got %+v", ps)
		}
		v := ps[0].VoIP[0]
		if v.SSRC != 0x22222222 || v.LossRate != 26 || v.RoundTripDelay != 180 || v.EndSystemDelay != 20 || v.MOSLQ != 41 || v.RFactor != 93 {
			t.Errorf("got %+v", v)
		}
	})
	errs := []struct{ name, pkt string }{
		{"length past datagram", "80c9000a11111111"},
		{"report count past body", "82c9000111111111"},
		{"bad version", "40c9000111111111"},
		{"type out of range", "80d0000111111111"},
		{"trailing garbage", "80c9000111111111" + "00"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseCompound(mustHex(t, tc.pkt)); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
}

func TestLooksLikeRTCP(t *testing.T) {
	if !LooksLikeRTCP(mustHex(t, srrr)) {
		t.Error("sr+rr: got false, want true")
	}
	if LooksLikeRTCP(mustHex(t, "80080001000000a0d2bd4e3e")) {
		t.Error("rtp: got true, want false")
	}
}

func TestParseEvent(t *testing.T) {
	// SIP_DTMF2.cap telephone-event payloads.
	tests := []struct {
		pkt  string
		want Event
	}{
		{"06070000", Event{Code: 6, Volume: 7, Duration: 0}},
		{"068703c0", Event{Code: 6, End: true, Volume: 7, Duration: 960}},
	}
	for _, tc := range tests {
		got, err := ParseEvent(mustHex(t, tc.pkt))
		if err != nil || got != tc.want {
			t.Errorf("ParseEvent(%s): got %+v, %v, want %+v", tc.pkt, got, err, tc.want)
		}
	}
	if _, err := ParseEvent([]byte{1, 2}); err == nil {
		t.Error("short event: got no error")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mustHex(f, "80880001000000a0d2bd4e3ed5d5d5d5"))
	f.Add(mustHex(f, "92000102000000010000000a0000000100000002bede000111223344ff"))
	f.Add(mustHex(f, "a0000001000000010000000aaabb0003"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		if h.PayloadOffset < HeaderLen || h.PayloadOffset+h.PayloadLen > len(b) || h.PayloadLen < 0 {
			t.Fatalf("payload range %d+%d outside %d bytes", h.PayloadOffset, h.PayloadLen, len(b))
		}
	})
}

func FuzzParseCompound(f *testing.F) {
	f.Add(mustHex(f, srrr))
	f.Add(mustHex(f, rrsdes))
	f.Add(mustHex(f, srsdes))
	f.Add(mustHex(f, "80cf000a1111111107000008222222221a0000000000000000b400147f7f7f7f5d5d29290000000000000000"))
	f.Add(mustHex(f, "81cb00011111111181cc0002111111114142434481cf00041111111105000002222222220000000100000002"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, _ := ParseCompound(b)
		for _, p := range ps {
			if len(p.Reports) > 31 || len(p.Bye) > 31 {
				t.Fatalf("counts past the 5-bit field: %d reports, %d bye", len(p.Reports), len(p.Bye))
			}
			for _, c := range p.CNAMEs {
				if len(c.CNAME) > 3*MaxCNAME {
					t.Fatalf("cname %d bytes", len(c.CNAME))
				}
			}
		}
	})
}

func FuzzParseEvent(f *testing.F) {
	f.Add(mustHex(f, "06070000"))
	f.Add(mustHex(f, "068703c0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEvent(b)
		if err == nil && e.Volume > 63 {
			t.Fatalf("volume %d", e.Volume)
		}
	})
}

func TestStaticCodec(t *testing.T) {
	tests := []struct {
		pt   uint8
		want Codec
		ok   bool
	}{
		{0, Codec{"PCMU", 8000, KindAudio}, true},
		{9, Codec{"G722", 8000, KindAudio}, true},
		{13, Codec{"CN", 8000, KindComfortNoise}, true},
		{19, Codec{"CN", 8000, KindComfortNoise}, true},
		{34, Codec{"H263", 90000, KindVideo}, true},
		{96, Codec{}, false},
		{2, Codec{"G726-32", 8000, KindAudio}, true}, // RFC 1890 G721: G.726 at 32 kbit/s
	}
	for _, tc := range tests {
		got, ok := StaticCodec(tc.pt)
		if got != tc.want || ok != tc.ok {
			t.Errorf("StaticCodec(%d): got %+v %v, want %+v %v", tc.pt, got, ok, tc.want, tc.ok)
		}
	}
	if c := NamedCodec("OPUS", 0, "audio"); c.Name != "opus" || c.ClockRate != 48000 || c.Kind != KindAudio {
		t.Errorf("NamedCodec(OPUS): got %+v", c)
	}
	if c := NamedCodec("x-custom", 12000, "video"); c.Name != "x-custom" || c.ClockRate != 12000 || c.Kind != KindVideo {
		t.Errorf("NamedCodec(x-custom): got %+v", c)
	}
}

// TestNamedCodecLooksUpWithoutCase: the encoding name is matched without
// regard to case, as strings.ToLower then the table would, for every name
// of the table in three spellings and for names the fast path hands back
// to strings.ToLower (non-ASCII, longer than 32 bytes).
func TestNamedCodecLooksUpWithoutCase(t *testing.T) {
	names := []string{"", "x-custom", "OPUS\u0130", "\u212a", strings.Repeat("A", 33), "PCMU ", "pcmu\x00"}
	for k := range dynamic {
		names = append(names, k, strings.ToUpper(k), strings.ToUpper(k[:1])+k[1:])
	}
	for _, n := range names {
		want, wantOK := dynamic[strings.ToLower(n)]
		got, ok := lookupDynamic(n)
		if got != want || ok != wantOK {
			t.Errorf("lookupDynamic(%q) = %+v, %v; strings.ToLower gives %+v, %v", n, got, ok, want, wantOK)
		}
	}
	if c, ok := lookupDynamic("PCMA"); !ok || c.Name != "PCMA" || c.ClockRate != 8000 {
		t.Errorf("PCMA: %+v %v", c, ok)
	}
	if n := testing.AllocsPerRun(100, func() { NamedCodec("Telephone-Event", 8000, "audio") }); n != 0 {
		t.Errorf("NamedCodec allocates %v times for a mixed-case name", n)
	}
}
