package media

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// rtpTruth is the part of a capture's tshark reference answer these tests
// read: tshark -q -z rtp,streams, by default (streams an SDP set up) and
// with -o rtp.heuristic_rtp:TRUE (every RTP-looking flow).
type rtpTruth struct {
	RTP struct {
		Default   struct{ Streams []truthStream } `json:"default"`
		Heuristic struct{ Streams []truthStream } `json:"heuristic"`
	} `json:"rtp"`
}

type truthStream struct {
	SSRC    string `json:"ssrc"`
	Src     string `json:"src"`
	Dst     string `json:"dst"`
	Packets uint64 `json:"packets"`
}

func (s truthStream) key() string { return fmt.Sprintf("%s %s>%s %d", s.SSRC, s.Src, s.Dst, s.Packets) }

func orphanKeys(os []Orphan) []string {
	var out []string
	for _, o := range os {
		out = append(out, fmt.Sprintf("%s %s>%s %d", o.SSRC, o.Src, o.Dst, o.Packets))
	}
	slices.Sort(out)
	return out
}

// TestReconcileOrphansMatchesTshark checks the orphan set against tshark's
// streams (testdata/captures/truth): an orphan is a flow tshark's RTP
// heuristics find and no SIP SDP set up.
//
//   - speech_8k_ulaw.pcap and voicecmd_combined.pcap hold RTP and no SIP
//     (tshark -Y sip: nothing): every heuristic stream is an orphan.
//   - SIP_CALL_RTP_G711: the heuristic streams less the ones tshark's SDP
//     tracking set up, 200.57.7.196:40378 <> 200.57.7.199:4800 both ways,
//     plus 0x00002e3d 200.57.7.202:30000 > 200.57.7.196:40362, which tshark
//     set up from SDP carried by MGCP (frames 2945-2946, CRCX and its 200):
//     sipnab reads SDP from SIP only, so it reads never-named and the note
//     says why.
func TestReconcileOrphansMatchesTshark(t *testing.T) {
	for _, tc := range []struct {
		file  string
		extra []string // streams tshark's SDP tracking set up that sipnab cannot
	}{
		{file: "speech_8k_ulaw.pcap"},
		{file: "voicecmd_combined.pcap"},
		{file: "SIP_CALL_RTP_G711", extra: []string{"0x00002e3d 200.57.7.202:30000>200.57.7.196:40362 6"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tr := testcap.LoadTruth[rtpTruth](t, tc.file)
			signaled := map[string]bool{}
			for _, s := range tr.RTP.Default.Streams {
				signaled[s.key()] = true
			}
			want := append([]string(nil), tc.extra...)
			for _, s := range tr.RTP.Heuristic.Streams {
				if !signaled[s.key()] {
					want = append(want, s.key())
				}
			}
			slices.Sort(want)
			c := load(t, tc.file)
			var got ReconcileOrphans
			call(t, reconcileOrphansTool(&deps{capture: c}), `{}`, &got)
			if g := orphanKeys(got.Orphans); !slices.Equal(g, want) {
				t.Errorf("orphans\n got %q\nwant %q", g, want)
			}
			if got.TotalOrphans != len(want) || got.Returned != len(want) || got.Truncated == nil || *got.Truncated || got.NextCursor != nil {
				t.Errorf("envelope: total %d returned %d truncated %v next %v; want %d, whole", got.TotalOrphans, got.Returned, got.Truncated, got.NextCursor, len(want))
			}
			if got.RelayWasConsulted || !strings.Contains(got.Note, "MGCP") {
				t.Errorf("relay_was_consulted %v note %q", got.RelayWasConsulted, got.Note)
			}
			for _, o := range got.Orphans {
				if o.Reason != ReasonNeverNamed || o.RelayWasConsulted || o.AssertedBy != "" || o.NamedEndpoint != "" ||
					!strings.Contains(o.Note, "nobody asked") || !strings.Contains(o.Note, o.Src) || o.Frame == "" {
					t.Errorf("orphan %+v: want never-named, nobody asked, naming its ends and first frame", o)
				}
			}
		})
	}
}

// TestReconcileOrphansSignaledButNoDialog: with a dialog store of one
// dialog, SIP_CALL_RTP_G711's first call (12013223@200.57.7.195) is
// evicted when the next Call-ID arrives, while its two streams stay bound
// to the endpoints its SDP named (200.57.7.196:40376 in the INVITE,
// 200.57.7.204:8000 in the 200: tshark -Y sdp -e sdp.connection_info.address
// -e sdp.media.port, frames 1 and 498). They read signaled-but-no-dialog,
// named by that Call-ID; the three never-named streams stay as they were.
func TestReconcileOrphansSignaledButNoDialog(t *testing.T) {
	c := loadWith(t, engine.Config{Node: "test", Dialog: dialog.Config{MaxDialogs: 1}}, "SIP_CALL_RTP_G711")
	var got ReconcileOrphans
	call(t, reconcileOrphansTool(&deps{capture: c}), `{}`, &got)
	if got.TotalOrphans != 5 {
		t.Fatalf("got %d orphans, want 5: %+v", got.TotalOrphans, got.Orphans)
	}
	signaled := map[string]string{}
	for _, o := range got.Orphans {
		if o.Reason != ReasonSignaledNoDialog {
			continue
		}
		if o.AssertedBy != "signaled" || o.AssertedCallID != "12013223@200.57.7.195" || o.NamedAt == nil || !strings.Contains(o.Note, "evicted") {
			t.Errorf("signaled orphan %+v", o)
		}
		signaled[o.SSRC+" "+o.Src+">"+o.Dst] = o.NamedEndpoint
	}
	want := map[string]string{
		"0xd2bd4e3e 200.57.7.204:8000>200.57.7.196:40376": "200.57.7.196:40376",
		"0x58f33dea 200.57.7.196:40376>200.57.7.204:8000": "200.57.7.196:40376",
	}
	if fmt.Sprint(signaled) != fmt.Sprint(want) {
		t.Errorf("signaled-but-no-dialog: got %v, want %v", signaled, want)
	}
}

// TestReconcileOrphansPages: two by two through SIP_CALL_RTP_G711's
// three orphans, the cursor bound to the listing; a cursor from another
// capture is refused, and a byte cap too small for one orphan is refused.
func TestReconcileOrphansPages(t *testing.T) {
	c := load(t, "SIP_CALL_RTP_G711")
	tool := reconcileOrphansTool(&deps{capture: c})
	var p1, p2 ReconcileOrphans
	call(t, tool, `{"limit":2}`, &p1)
	if p1.Returned != 2 || p1.TotalOrphans != 3 || p1.Truncated == nil || !*p1.Truncated || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1.Page)
	}
	call(t, tool, `{"limit":2,"cursor":`+quote(*p1.NextCursor)+`}`, &p2)
	if p2.Returned != 1 || p2.NextCursor != nil || p2.Truncated == nil || *p2.Truncated {
		t.Fatalf("page 2: %+v", p2.Page)
	}
	all := append(append([]Orphan(nil), p1.Orphans...), p2.Orphans...)
	var whole ReconcileOrphans
	call(t, tool, `{}`, &whole)
	if fmt.Sprint(orphanKeys(all)) != fmt.Sprint(orphanKeys(whole.Orphans)) {
		t.Errorf("pages %v differ from the whole %v", orphanKeys(all), orphanKeys(whole.Orphans))
	}

	other := reconcileOrphansTool(&deps{capture: load(t, "SIP_CALL_RTP_G711")})
	if e := callErr(t, other, `{"cursor":`+quote(*p1.NextCursor)+`}`); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "capture instance") {
		t.Errorf("a cursor of another capture: got %d %q, want -32602 naming the capture instance", e.Code, e.Message)
	}
	if e := callErr(t, tool, `{"max_response_bytes":100}`); e.Kind != sdk.KindTooLarge || e.Argument != "max_response_bytes" {
		t.Errorf("100-byte cap: got %s on %q, want response_too_large on max_response_bytes", e.Kind, e.Argument)
	}
	// One orphan's answer is 2756 bytes on the wire (the refusal of 2000
	// says so); 3500 holds one and not two.
	var fit ReconcileOrphans
	call(t, tool, `{"max_response_bytes":3500}`, &fit)
	if fit.Returned != 1 || fit.NextCursor == nil || fit.Truncated == nil || !*fit.Truncated {
		t.Errorf("3500-byte cap: returned %d next %v, want one orphan and a cursor", fit.Returned, fit.NextCursor)
	}
}

// TestReconcileOrphansNoneIsAnEmptyPage: a capture whose streams all have
// their dialog answers an empty orphans list, not an absent one.
func TestReconcileOrphansNoneIsAnEmptyPage(t *testing.T) {
	c := load(t, "sip-rtp-g711.pcap")
	r := call(t, reconcileOrphansTool(&deps{capture: c}), `{}`, nil)
	if !strings.Contains(r.Blocks[0], `"orphans":[]`) || !strings.Contains(r.Blocks[0], `"total_orphans":0`) {
		t.Errorf("answer %s", r.Blocks[0])
	}
}
