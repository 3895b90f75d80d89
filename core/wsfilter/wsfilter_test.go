package wsfilter

import (
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"plain", "a84b4c76e66710@pc33.atlanta.com", `"a84b4c76e66710@pc33.atlanta.com"`, nil},
		{"quote and backslash", `x"y\z`, `"x\"y\\z"`, nil},
		{"UTF-8 kept", "tést-ü", `"tést-ü"`, nil},
		{"invalid UTF-8 as hex escapes", "a\xffb\xc3", `"a\xffb\xc3"`, nil},
		{"CR refused", "abc\r\nsip.Call-ID", "", ErrControl},
		{"NUL refused", "a\x00", "", ErrControl},
		{"tab refused", "a\tb", "", ErrControl},
		{"DEL refused", "a\x7f", "", ErrControl},
		{"C1 refused", "a\u0085b", "", ErrControl},
		{"bidi override refused", "abc\u202edef", "", ErrControl},
		{"empty", "", `""`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Quote(tc.in)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestForCall(t *testing.T) {
	ap := netip.MustParseAddrPort
	streams := []Stream{
		{SSRC: 0x343da99b, Src: ap("10.0.2.15:27942"), Dst: ap("10.0.2.20:6000"), RTCP: true},
		{SSRC: 0x1, Src: ap("[2001:db8::1]:4000"), Dst: ap("[2001:db8::2]:5000")},
		{Fax: true, Src: ap("10.0.0.1:6000"), Dst: ap("10.0.0.2:6002")},
	}
	f, err := ForCall("1-1966@10.0.2.20", streams)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"sip": `sip.Call-ID == "1-1966@10.0.2.20"`,
		// By 5-tuple as well as SSRC: frames tshark re-dissects as another
		// protocol after an SDP change carry no rtp.ssrc.
		"rtp": `(ip.src == 10.0.2.15 && udp.srcport == 27942 && ip.dst == 10.0.2.20 && udp.dstport == 6000 && (rtp.ssrc == 0x343da99b || !rtp)) || ` +
			`(ipv6.src == 2001:db8::1 && udp.srcport == 4000 && ipv6.dst == 2001:db8::2 && udp.dstport == 5000 && (rtp.ssrc == 0x00000001 || !rtp)) || ` +
			`(ip.src == 10.0.0.1 && udp.srcport == 6000 && ip.dst == 10.0.0.2 && udp.dstport == 6002 && !rtp)`,
		"rtcp": `(rtcp.senderssrc == 0x343da99b && ip.src == 10.0.2.15 && ip.dst == 10.0.2.20)`,
	}
	for k, got := range map[string]string{"sip": f.SIP, "rtp": f.RTP, "rtcp": f.RTCP} {
		if got != want[k] {
			t.Errorf("%s: got\n%s\nwant\n%s", k, got, want[k])
		}
	}
	if f.Display != want["sip"]+" || "+want["rtp"]+" || "+want["rtcp"] {
		t.Errorf("got display %s", f.Display)
	}
	if _, err := ForCall("bad\ncall", nil); !errors.Is(err, ErrControl) {
		t.Errorf("got %v, want ErrControl", err)
	}
	many := make([]Stream, MaxStreams+5)
	for i := range many {
		many[i] = Stream{SSRC: uint32(i), Src: ap("10.0.0.1:1000"), Dst: ap("10.0.0.2:2000")}
	}
	f, _ = ForCall("x", many)
	if len(f.Streams) != MaxStreams || f.StreamsOmitted != 5 || strings.Count(f.Display, "rtp.ssrc") != MaxStreams {
		t.Errorf("got %d streams, %d omitted, %d clauses; want %d, 5, %d", len(f.Streams), f.StreamsOmitted, strings.Count(f.Display, "rtp.ssrc"), MaxStreams, MaxStreams)
	}
}

// TestShellQuoteRoundTrip runs each quoted argument through /bin/sh and
// checks it arrives unchanged.
func TestShellQuoteRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to check the quoting with")
	}
	for _, s := range []string{
		"plain.pcap", "/captures/a b.pcap", "it's", `sip.Call-ID == "x'y" || $(rm -rf /) ; ` + "`id`",
		"'", "''", `\'`, "*", "~root", "a\nb", "",
	} {
		out, err := exec.Command(sh, "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q: quoted %s, shell printed %q (%v)", s, ShellQuote(s), out, err)
		}
	}
}

func TestCommand(t *testing.T) {
	got := Command("/data/my call.pcap", `sip.Call-ID == "it's"`, Options{Heuristics: true})
	want := `tshark -r '/data/my call.pcap' -o rtp.heuristic_rtp:TRUE -o rtcp.heuristic_rtcp:TRUE -Y 'sip.Call-ID == "it'\''s"'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := Command("x.pcap", "sip", Options{DecodeAs: []string{"tcp.port==6060,sip", "udp.port==5080,sip"}}),
		`tshark -r x.pcap -d tcp.port==6060,sip -d udp.port==5080,sip -Y sip`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := Command("", "sip", Options{}), `tshark -r "$CAPTURE" -Y sip`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
